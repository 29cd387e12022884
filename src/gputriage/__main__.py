from gputriage.cli.main import main

main()
