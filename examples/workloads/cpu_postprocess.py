"""Detection-style inference: a conv backbone in bf16 scores 4,096 candidate boxes per image on batches of
16 images of 512x512; the boxes are copied to the host and filtered per image with a greedy non-maximum
suppression in numpy."""

import argparse
import time

import numpy as np
import torch

from gputriage import step

BATCH, SIZE = 16, 512
DEV = "cuda" if torch.cuda.is_available() else "cpu"


def nms(boxes: np.ndarray, scores: np.ndarray, iou: float = 0.5, top: int = 1000) -> list[int]:
    order = np.argsort(-scores)[:top]
    keep = []
    x1, y1, x2, y2 = boxes[:, 0], boxes[:, 1], boxes[:, 2], boxes[:, 3]
    area = (x2 - x1) * (y2 - y1)
    while order.size:
        i = order[0]
        keep.append(int(i))
        rest = order[1:]
        w = np.clip(np.minimum(x2[i], x2[rest]) - np.maximum(x1[i], x1[rest]), 0, None)
        h = np.clip(np.minimum(y2[i], y2[rest]) - np.maximum(y1[i], y1[rest]), 0, None)
        inter = w * h
        order = rest[inter / (area[i] + area[rest] - inter + 1e-6) < iou]
    return keep


def main(seconds: float = 10.0) -> None:
    chans = [3, 32, 64, 128, 256]
    layers = [
        m for a, b in zip(chans, chans[1:]) for m in (torch.nn.Conv2d(a, b, 3, stride=2, padding=1), torch.nn.ReLU())
    ]
    net = torch.nn.Sequential(*layers, torch.nn.Conv2d(256, 6, 1), torch.nn.Upsample(scale_factor=2)).to(DEV)
    net = net.to(torch.bfloat16).eval()
    images = torch.randn(BATCH, 3, SIZE, SIZE, device=DEV, dtype=torch.bfloat16)

    @torch.inference_mode()
    def detect() -> int:
        out = net(images).flatten(2).transpose(1, 2).float()  # (batch, 4096, 6)
        xy = out[..., :2].sigmoid() * SIZE
        wh = out[..., 2:4].exp().clamp(max=8) * 16
        boxes = torch.cat([xy - wh / 2, xy + wh / 2], -1).cpu().numpy()
        scores = out[..., 4].sigmoid().cpu().numpy()
        return sum(len(nms(b[s > 0.3], s[s > 0.3])) for b, s in zip(boxes, scores))

    detect()
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        detect()
        n += BATCH
        step(samples=BATCH)
    print(f"throughput: {n / (time.perf_counter() - t0):.1f} images/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)
