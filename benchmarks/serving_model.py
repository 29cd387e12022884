"""Build a Llama with random weights for `gputriage load` on a real server (nothing downloaded): the
architecture of a ~1B model (or smaller), bf16, with a word-level tokenizer over the load generator's
words (one token per word), saved where `transformers serve PATH` reads it.

    python benchmarks/serving_model.py /tmp/llama-1b --hidden 2048 --layers 16   # ~1.1 B parameters
"""

from __future__ import annotations

import argparse

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from gputriage.serving.prompts import WORDS


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out")
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--layers", type=int, default=16)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--kv-heads", type=int, default=8)
    ap.add_argument(
        "--vocab", type=int, default=32000, help="vocabulary: the load's words, then filler words up to this size"
    )
    ap.add_argument("--context", type=int, default=8192)
    args = ap.parse_args()
    words = sorted(set(WORDS))
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, **{w: i + 3 for i, w in enumerate(words)}}
    # every embedding row a word: random weights pick any id, and an id the tokenizer lacks decodes to nothing
    # (a stream with no text, its tokens invisible to a client that times chunks)
    vocab.update({f"w{i}": i for i in range(len(vocab), args.vocab)})
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece(prefix="##")
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>")
    fast.chat_template = "{% for m in messages %}{{ m['content'] }} {% endfor %}"
    fast.save_pretrained(args.out)
    cfg = LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=args.hidden,
        intermediate_size=int(args.hidden * 2.75) // 64 * 64,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        num_key_value_heads=args.kv_heads,
        max_position_embeddings=args.context,
        bos_token_id=1,
        eos_token_id=2,
        torch_dtype="bfloat16",
    )
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    with torch.device(device):
        model = LlamaForCausalLM(cfg).to(torch.bfloat16)
    # no end-of-sequence: every request streams the max_tokens it asks for (as vLLM's ignore_eos would); random
    # weights would otherwise end some at random, and a load test's figures would mix request lengths
    model.generation_config.eos_token_id = None
    model.save_pretrained(args.out)
    n = sum(p.numel() for p in model.parameters())
    print(f"{args.out}: {n / 1e9:.2f} B parameters, {2 * n / 1e9:.2f} GB of bf16 weights")


if __name__ == "__main__":
    main()
