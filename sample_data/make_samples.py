"""Generate the built-in demo pools (run from the project root: python sample_data/make_samples.py).

All three have a true-label column so the oracle can be simulated:

* products.csv: 2,000 pairs of product records, ~4% matches, with readable record text (an
  entity-resolution task, so labelling is meaningful in a demo);
* needle.csv.gz: 60,000 items with 12 positives (1 in 5,000), scores only;
* sentiment3.csv: 1,500 short texts in three classes with one score column per class;
* deliveries.csv: 3,000 delivery-time predictions (minutes) from a regression model with its
  own standard deviation, and the true times: errors of a few minutes, except on the longest
  routes (a tenth of them), where they are heavy-tailed (Student t, 3 degrees of freedom,
  scale 20 minutes) and the model says only that it is less sure (sd 15 against 2).
"""

from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
BRANDS = [
    "Sony",
    "Samsung",
    "Panasonic",
    "LG",
    "Philips",
    "Canon",
    "Nikon",
    "Bose",
    "JVC",
    "Toshiba",
    "Sharp",
    "Pioneer",
    "Garmin",
    "Logitech",
    "Olympus",
]
KINDS = [
    ("LCD TV", "in"),
    ("Digital Camera", "MP"),
    ("Headphones", "mm"),
    ("Soundbar", "W"),
    ("DVD Player", "x"),
    ("GPS Navigator", "in"),
    ("Wireless Mouse", "dpi"),
    ("Camcorder", "x zoom"),
]
COLOURS = ["Black", "Silver", "White", "Red", "Blue"]


def _product(rng):
    brand = BRANDS[rng.integers(len(BRANDS))]
    kind, unit = KINDS[rng.integers(len(KINDS))]
    model = f"{''.join(rng.choice(list('ABCDEFKLMNPSTX'), 2))}-{rng.integers(100, 9999)}"
    size = int(rng.integers(5, 60))
    colour = COLOURS[rng.integers(len(COLOURS))]
    return dict(
        brand=brand,
        kind=kind,
        unit=unit,
        model=model,
        size=size,
        colour=colour,
        price=round(float(rng.uniform(20, 1500)), 2),
    )


def _render(product, rng, variant):
    if not variant:
        return (
            f"{product['brand']} {product['model']} {product['size']}{product['unit']} "
            f"{product['kind']} - {product['colour']}, ${product['price']:.2f}"
        )
    model = product["model"].replace("-", "" if rng.random() < 0.5 else " ")
    price = product["price"] * rng.uniform(0.9, 1.1)
    return (
        f"{product['kind']} by {product['brand'].upper()} ({model}), "
        f"{product['colour'].lower()}, {product['size']} {product['unit']} - {price:.2f} USD"
    )


def products(n=2000, match_rate=0.04, seed=1):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        left = _product(rng)
        match = rng.random() < match_rate
        right = left if match else _product(rng)
        if not match and rng.random() < 0.3:  # hard negatives: same brand and kind
            right = dict(right, brand=left["brand"], kind=left["kind"], unit=left["unit"])
        similarity = (
            (left["brand"] == right["brand"])
            + (left["kind"] == right["kind"])
            + 2.5 * (left["model"] == right["model"])
            + 0.5 * (left["size"] == right["size"])
        )
        score = similarity - 3.2 + rng.normal(0, 0.7)
        rows.append(
            dict(
                item_id=f"pair-{i:04d}",
                left=_render(left, rng, False),
                right=_render(right, rng, True),
                score=round(score, 4),
                label=int(match),
            )
        )
    return pd.DataFrame(rows)


def needle(n=60_000, positives=12, seed=2):
    rng = np.random.default_rng(seed)
    label = np.zeros(n, dtype=int)
    label[rng.choice(n, positives, replace=False)] = 1
    score = np.where(label == 1, rng.normal(1.0, 1.2, n), rng.normal(-3.0, 1.0, n))
    return pd.DataFrame({"item_id": np.arange(n), "score": score.round(4), "label": label})


def sentiment3(n=1500, seed=3):
    rng = np.random.default_rng(seed)
    classes = ["negative", "neutral", "positive"]
    words = {
        "negative": ["awful", "broken", "refund", "late", "rude"],
        "neutral": ["arrived", "package", "ordered", "Tuesday", "box"],
        "positive": ["great", "love", "perfect", "fast", "recommend"],
    }
    y = rng.choice(3, n, p=[0.2, 0.5, 0.3])
    logits = rng.normal(0, 1, (n, 3)) + 1.8 * np.eye(3)[y]
    texts = []
    for c in y:
        own = rng.choice(words[classes[c]], 2)
        other = rng.choice(words[classes[rng.integers(3)]], 1)
        texts.append(" ".join(rng.permutation(np.concatenate([own, other]))).capitalize() + ".")
    frame = pd.DataFrame({"item_id": np.arange(n), "text": texts})
    for c, name in enumerate(classes):
        frame[f"score_{name}"] = logits[:, c].round(4)
    frame["label"] = [classes[c] for c in y]
    return frame


def deliveries(n=3000, seed=4):
    rng = np.random.default_rng(seed)
    towns = ["Arden", "Brill", "Colne", "Dunmore", "Elstow", "Fenwick", "Garth", "Holme"]
    pred = rng.uniform(10, 110, n).round(1)
    long_route = pred > 100
    error = np.where(long_route, 20 * rng.standard_t(3, n), rng.normal(0, 2, n))
    start, end = rng.integers(len(towns), size=(2, n))
    return pd.DataFrame(
        {
            "item_id": [f"D{i:05d}" for i in range(n)],
            "route": [f"{towns[a]} to {towns[b]}" for a, b in zip(start, end, strict=True)],
            "pred": pred,
            "sd": np.where(long_route, 15.0, 2.0),
            "label": np.maximum(pred + error, 1.0).round(1),
        }
    )


if __name__ == "__main__":
    products().to_csv(HERE / "products.csv", index=False)
    needle().to_csv(HERE / "needle.csv.gz", index=False)
    sentiment3().to_csv(HERE / "sentiment3.csv", index=False)
    deliveries().to_csv(HERE / "deliveries.csv", index=False)
