"""The text task: a small character-level transformer language model on real text.

The digits MLP (`workers.train`) is small enough to train in seconds; this module gives the
experiment a second task with a model of over a million parameters, trained on text, behind
the same `Dataset` and `DigitsSplit` types so the rest of the system handles both alike.

**Why the corpus is the standard library's own source.** Language models need real text, and
the experiment must run offline and give every process the same split. The source of CPython's
standard library is real text written by people (code, comments, docstrings), ships with every
Python installation, needs no download, no data package and no licence check beyond Python's
own, and reads the same on every run: `CORPUS_MODULES` names a fixed, sorted list of pure-Python
modules that every CPython 3.11 installation has, and `load_corpus` concatenates them in that
order and cuts the result to a fixed size (2,000,000 characters by default; the modules hold
about 2.08 MB). Patch releases of 3.11 differ in a few lines of these files, so the text, not
its size, can differ between two interpreters; every process of one experiment runs the same
interpreter and so reads the same text.

**Vocabulary.** Tab, newline and the 95 printable ASCII characters, plus ASCII SUB ("\\x1a",
the substitute character) for anything else (form feeds, carriage returns, the odd non-ASCII
letter): 98 symbols, fixed whatever the text.

**Model.** `make_transformer` builds a decoder-only transformer: token and learned position
embeddings, pre-norm blocks of causal multi-head self-attention (heads of 32 dimensions) and a
4x GELU MLP, a final LayerNorm and an output projection to the vocabulary. The default
configuration, width 160, 4 layers, context 64, has 1,279,138 parameters
(`transformer_params(160, 4, 64)`); one training sample is 64 characters in and the 64
characters that follow each of them out.
"""

from __future__ import annotations

import math
import re
import sysconfig
from pathlib import Path

import numpy as np
import torch
from torch import nn

from innet.exceptions import InnetError
from workers.train import Dataset, DigitsSplit

DEFAULT_WIDTH = 160
DEFAULT_LAYERS = 4
DEFAULT_CONTEXT = 64
HEAD_DIM = 32
INIT_STD = 0.02  # GPT-2's: the initial loss is close to ln(len(VOCAB))

CORPUS_MODULES: tuple[str, ...] = (
    "argparse.py",
    "ast.py",
    "calendar.py",
    "collections/__init__.py",
    "configparser.py",
    "contextlib.py",
    "csv.py",
    "dataclasses.py",
    "datetime.py",
    "difflib.py",
    "doctest.py",
    "enum.py",
    "fractions.py",
    "functools.py",
    "gettext.py",
    "heapq.py",
    "inspect.py",
    "ipaddress.py",
    "json/decoder.py",
    "json/encoder.py",
    "logging/__init__.py",
    "optparse.py",
    "pathlib.py",
    "pickle.py",
    "pprint.py",
    "queue.py",
    "random.py",
    "shlex.py",
    "shutil.py",
    "statistics.py",
    "string.py",
    "subprocess.py",
    "tarfile.py",
    "tempfile.py",
    "textwrap.py",
    "threading.py",
    "tokenize.py",
    "typing.py",
    "zipfile.py",
)

REPLACEMENT = "\x1a"  # ASCII SUB: stands for every character outside the vocabulary
VOCAB: str = "\t\n" + "".join(chr(c) for c in range(32, 127)) + REPLACEMENT
_OUTSIDE = re.compile(r"[^\t\n\x20-\x7e]")
_IDS = np.zeros(128, dtype=np.int64)  # ASCII code -> index in VOCAB
_IDS[[ord(c) for c in VOCAB]] = np.arange(len(VOCAB))


class CorpusError(InnetError, ValueError):
    """The text corpus cannot be read, or holds too little text for the split asked for."""


def stdlib_dir() -> Path:
    """The running interpreter's standard library directory (where `CORPUS_MODULES` live)."""
    return Path(sysconfig.get_paths()["stdlib"])


def clean(text: str) -> str:
    """`text` with every character outside `VOCAB` replaced by `REPLACEMENT`."""
    return _OUTSIDE.sub(REPLACEMENT, text)


def load_corpus(max_bytes: int = 2_000_000) -> str:
    """The corpus: `CORPUS_MODULES` in order, concatenated, cleaned, cut to `max_bytes`.

    Every character of the result is one ASCII byte, so `max_bytes` is also its length when
    the modules hold enough text.
    """
    if max_bytes < 1:
        raise ValueError(f"max_bytes must be >= 1, got {max_bytes}")
    root = stdlib_dir()
    parts: list[str] = []
    size = 0
    for name in CORPUS_MODULES:
        path = root / name
        if not path.is_file():
            raise CorpusError(
                f"the text corpus needs {name} from the standard library, but {path} is not a "
                f"file (standard library directory: {root}); run with a complete CPython 3.11"
            )
        part = clean(path.read_text(encoding="utf-8", errors="replace"))
        parts.append(part)
        size += len(part)
        if size >= max_bytes:
            break
    return "".join(parts)[:max_bytes]


def encode_text(text: str) -> torch.Tensor:
    """Indices into `VOCAB` (int64, one per character); characters outside it map to SUB."""
    codes = np.frombuffer(clean(text).encode("ascii"), dtype=np.uint8)
    return torch.from_numpy(_IDS[codes])


def decode_ids(ids: torch.Tensor) -> str:
    """The text of a 1-D tensor of indices into `VOCAB` (the inverse of `encode_text`)."""
    return "".join(VOCAB[i] for i in ids.tolist())


def _windows(ids: torch.Tensor, context: int, count: int) -> tuple[torch.Tensor, torch.Tensor]:
    """`count` non-overlapping windows of `ids` (views): inputs ids[k*c : k*c+c], targets the
    characters one later."""
    x = ids[: count * context].reshape(count, context)
    y = ids[1 : count * context + 1].reshape(count, context)
    return x, y


def split_text(
    islands: int, workers_per_island: int, seed: int, context: int, test_windows: int = 256
) -> DigitsSplit:
    """The corpus as a test set and islands x workers shards of windows, deterministic in `seed`.

    The test set is the corpus's last `test_windows` * `context` + 1 characters, cut into
    `test_windows` non-overlapping windows; the text before it is cut into non-overlapping
    windows (`Dataset.x` (n, context) inputs, `Dataset.y` the next character of each), which
    are shuffled with `seed` and dealt round-robin to the shards, so every shard samples the
    whole corpus and shard sizes differ by at most one.
    """
    if islands < 1:
        raise ValueError(f"islands must be >= 1, got {islands}")
    if workers_per_island < 1:
        raise ValueError(f"workers_per_island must be >= 1, got {workers_per_island}")
    if context < 2:
        raise ValueError(f"context must be >= 2 characters, got {context}")
    if test_windows < 1:
        raise ValueError(f"test_windows must be >= 1, got {test_windows}")
    if seed < 0:
        raise ValueError(f"seed must be >= 0, got {seed}")
    ids = encode_text(load_corpus())
    test_chars = test_windows * context + 1
    train_ids = ids[: max(ids.numel() - test_chars, 0)]
    train_count = max(train_ids.numel() - 1, 0) // context
    shards = islands * workers_per_island
    if train_count < shards:
        raise CorpusError(
            f"{islands} islands x {workers_per_island} workers need {shards} shards, but the "
            f"corpus ({ids.numel()} characters) holds only {train_count} training windows of "
            f"{context} after a test tail of {test_windows} windows; use fewer islands or "
            "workers, a shorter context or fewer test windows"
        )
    train_x, train_y = _windows(train_ids, context, train_count)
    test_x, test_y = _windows(ids[-test_chars:], context, test_windows)
    order = np.random.default_rng(seed).permutation(train_count)
    dealt = [torch.from_numpy(order[s::shards]) for s in range(shards)]
    parts = [Dataset(train_x[idx], train_y[idx]) for idx in dealt]  # indexing copies
    return DigitsSplit(
        test=Dataset(test_x.clone(), test_y.clone()),
        islands=tuple(
            tuple(parts[i * workers_per_island : (i + 1) * workers_per_island])
            for i in range(islands)
        ),
    )


def heads_for(width: int) -> int:
    """Attention heads of a model `width` wide: one per 32 dimensions, at least one."""
    return max(1, width // HEAD_DIM)


class CausalSelfAttention(nn.Module):
    """Multi-head self-attention in which each position sees only itself and earlier ones."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.heads = heads_for(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        b, t, width = h.shape
        qkv = self.qkv(h).reshape(b, t, 3, self.heads, width // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)  # each (b, heads, t, head width)
        out = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        mixed: torch.Tensor = self.proj(out.transpose(1, 2).reshape(b, t, width))
        return mixed


class TransformerBlock(nn.Module):
    """Pre-norm: h + attention(norm(h)), then that + MLP(norm(that)) with a 4x GELU MLP."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(width)
        self.attn = CausalSelfAttention(width)
        self.norm2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(
            nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width)
        )

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        h = h + self.attn(self.norm1(h))
        out: torch.Tensor = h + self.mlp(self.norm2(h))
        return out


class CharTransformer(nn.Module):
    """Decoder-only transformer over `VOCAB`: int64 (B, T) ids in, (B*T, len(VOCAB)) logits."""

    def __init__(self, width: int, layers: int, context: int) -> None:
        super().__init__()
        self.context = context
        self.tokens = nn.Embedding(len(VOCAB), width)
        self.positions = nn.Embedding(context, width)
        self.blocks = nn.Sequential(*(TransformerBlock(width) for _ in range(layers)))
        self.norm = nn.LayerNorm(width)
        self.out = nn.Linear(width, len(VOCAB))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        t = ids.shape[1]
        if t > self.context:
            raise ValueError(f"{t} characters in, but the model's context is {self.context}")
        h = self.tokens(ids) + self.positions(torch.arange(t, device=ids.device))
        logits: torch.Tensor = self.out(self.norm(self.blocks(h)))
        return logits.reshape(-1, len(VOCAB))


def make_transformer(width: int, layers: int, context: int, seed: int) -> nn.Module:
    """A `CharTransformer` initialised from `seed` (the global RNG is untouched).

    Linear and embedding weights are drawn from N(0, 0.02^2), biases are zero, LayerNorms
    start as the identity.
    """
    if width < 1 or layers < 1 or context < 1:
        raise ValueError(
            f"width, layers and context must be >= 1, got {width}, {layers}, {context}"
        )
    if width % heads_for(width) != 0:
        raise ValueError(
            f"width {width} does not split evenly into {heads_for(width)} attention heads; "
            "use a multiple of 32"
        )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = CharTransformer(width, layers, context)
        for module in model.modules():
            if isinstance(module, nn.Linear | nn.Embedding):
                nn.init.normal_(module.weight, std=INIT_STD)
            if isinstance(module, nn.Linear):
                nn.init.zeros_(module.bias)
    return model


def transformer_params(width: int, layers: int, context: int) -> int:
    """The number of parameters of `make_transformer(width, layers, context, seed)`."""
    vocab = len(VOCAB)
    block = (
        2 * width  # LayerNorm before attention
        + 3 * width * width
        + 3 * width  # query, key and value projections
        + width * width
        + width  # output projection
        + 2 * width  # LayerNorm before the MLP
        + 4 * width * width
        + 4 * width  # MLP up
        + 4 * width * width
        + width  # MLP down
    )
    embeddings = vocab * width + context * width
    return embeddings + layers * block + 2 * width + width * vocab + vocab


def perplexity(loss: float) -> float:
    """The perplexity of a mean cross-entropy `loss` (in nats per character)."""
    return math.exp(loss)
