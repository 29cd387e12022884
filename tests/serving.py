"""A real OpenAI-compatible server for the load tests: `transformers serve` (continuous batching, on the CPU)
with a tiny Llama made and saved here (random weights, a word-level tokenizer: nothing is downloaded)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

MAKE_MODEL = r"""
import sys, torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
out = sys.argv[1]
import gputriage.api.load as load
words = sorted(set(load.WORDS))
vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, **{w: i + 3 for i, w in enumerate(words)}}
tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
tok.decoder = decoders.WordPiece(prefix="##")
fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>")
fast.chat_template = "{% for m in messages %}{{ m['content'] }} {% endfor %}"
fast.save_pretrained(out)
cfg = LlamaConfig(vocab_size=len(vocab), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=2048, bos_token_id=1,
                  eos_token_id=2)
torch.manual_seed(0)
LlamaForCausalLM(cfg).save_pretrained(out)
"""


def make_model(folder: Path) -> Path:
    subprocess.run([sys.executable, "-c", MAKE_MODEL, str(folder)], check=True, capture_output=True, timeout=300)
    return folder


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """`transformers serve MODEL` on 127.0.0.1, until `stop()`."""

    def __init__(self, model: Path, *extra: str, log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        script = Path(sys.executable).parent / "transformers"
        self.log = log.open("w")
        self.proc = subprocess.Popen([str(script), "serve", str(model), "--host", "127.0.0.1", "--port", str(self.port),
                                      "--device", "cpu", "--continuous-batching", *extra],
                                     stdout=self.log, stderr=subprocess.STDOUT,
                                     env={**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"})
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"transformers serve exited: {log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=2):
                    return
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"transformers serve did not answer in 180 s: {log.read_text()[-2000:]}")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()
