"""Moving tensors from a candidate process to the worker without trusting the candidate.

Nothing is unpickled: a CPU tensor travels as raw bytes in a file in the candidate's scratch
directory, a CUDA tensor as a CUDA IPC handle described in plain JSON. The worker rebuilds a
plain torch.Tensor from the bytes, so a Tensor subclass or a patched method in the candidate
process cannot change what the worker compares. The exporter keeps its tensors alive until told to
release them (CUDA IPC needs that).
"""
from __future__ import annotations

import base64
import os
from typing import Any


def _dtype(name: str) -> Any:
    import torch

    value = getattr(torch, name, None)
    if not isinstance(value, torch.dtype):
        raise ValueError(f"unknown dtype {name!r}")
    return value


class Exporter:
    """Candidate side: describes values as JSON, holding references until release()."""

    def __init__(self, scratch: str) -> None:
        self.scratch = scratch
        self._held: list[Any] = []
        self._files: list[str] = []
        self._counter = 0

    def describe(self, value: Any) -> dict[str, Any]:
        import torch

        if isinstance(value, torch.Tensor):
            desc: dict[str, Any] = {
                "kind": "tensor",
                "type": f"{type(value).__module__}.{type(value).__qualname__}",
                "exact_type": type(value) is torch.Tensor,
                "dtype": str(value.dtype).replace("torch.", ""),
                "shape": list(value.shape),
                "device": str(value.device),
            }
            plain = torch.Tensor._make_subclass(torch.Tensor, value) if type(value) is not torch.Tensor else value
            plain = plain.detach()
            if plain.is_cuda:
                desc.update(self._export_cuda(plain.contiguous()))
            else:
                desc.update(self._export_cpu(plain.contiguous()))
            return desc
        if isinstance(value, (bool, int, float)) or value is None:
            return {"kind": "scalar", "value": value}
        return {"kind": "other", "type": type(value).__qualname__}

    def _export_cpu(self, t: Any) -> dict[str, Any]:
        import torch

        self._counter += 1
        path = os.path.join(self.scratch, f"value{self._counter}.bin")
        raw = t.reshape(-1).view(torch.uint8) if t.numel() else torch.empty(0, dtype=torch.uint8)
        raw.numpy().tofile(path)
        self._files.append(path)
        return {"file": os.path.basename(path), "nbytes": int(raw.numel())}

    def _export_cuda(self, t: Any) -> dict[str, Any]:
        from torch.multiprocessing.reductions import reduce_tensor

        self._held.append(t)
        _, args = reduce_tensor(t)
        (_cls, size, stride, offset, _storage_cls, _dtype_, device, handle, size_bytes,
         offset_bytes, _requires_grad, ref_handle, ref_offset, event_handle, event_sync) = args
        b64 = lambda b: base64.b64encode(b).decode() if b is not None else None  # noqa: E731
        return {"ipc": {
            "size": list(size), "stride": list(stride), "offset": int(offset),
            "device": int(device), "handle": b64(handle), "size_bytes": int(size_bytes),
            "offset_bytes": int(offset_bytes), "ref_handle": b64(ref_handle),
            "ref_offset": int(ref_offset), "event_handle": b64(event_handle),
            "event_sync": bool(event_sync)}}

    def release(self) -> None:
        self._held.clear()
        for path in self._files:
            try:
                os.unlink(path)
            except OSError:
                pass
        self._files.clear()


def rebuild(desc: dict[str, Any], scratch: str) -> Any:
    """Worker side: a plain tensor (or scalar) from a description. Raises ValueError if malformed."""
    import torch

    kind = desc.get("kind")
    if kind == "scalar":
        value = desc.get("value")
        if not isinstance(value, (bool, int, float)) and value is not None:
            raise ValueError("malformed scalar")
        return value
    if kind != "tensor":
        raise ValueError(f"the candidate returned a {desc.get('type', 'non-tensor')} value")
    dtype = _dtype(str(desc["dtype"]))
    shape = [int(s) for s in desc["shape"]]
    numel = 1
    for s in shape:
        if s < 0:
            raise ValueError("negative dimension")
        numel *= s
    itemsize = torch.empty(0, dtype=dtype).element_size()
    if "file" in desc:
        name = os.path.basename(str(desc["file"]))
        path = os.path.join(scratch, name)
        try:
            nbytes = os.path.getsize(path)
        except OSError as e:
            raise ValueError(f"value file {name} cannot be read: {e.strerror}") from None
        if nbytes != numel * itemsize:
            raise ValueError(f"value file holds {nbytes} bytes, expected {numel * itemsize}")
        if nbytes == 0:
            return torch.empty(shape, dtype=dtype)
        raw = torch.from_file(path, shared=False, size=nbytes, dtype=torch.uint8)
        return raw.view(dtype).reshape(shape).clone()
    ipc = desc.get("ipc")
    if not isinstance(ipc, dict):
        raise ValueError("tensor description has neither file nor ipc")
    from torch.multiprocessing.reductions import rebuild_cuda_tensor

    d64 = lambda s: base64.b64decode(s) if s is not None else None  # noqa: E731
    if [int(s) for s in ipc["size"]] != shape:
        raise ValueError("ipc size differs from the declared shape")
    if int(ipc["size_bytes"]) < numel * itemsize:
        raise ValueError("ipc storage smaller than the tensor")
    t = rebuild_cuda_tensor(
        torch.Tensor, torch.Size(shape), tuple(int(s) for s in ipc["stride"]), int(ipc["offset"]),
        torch.UntypedStorage, dtype, int(ipc["device"]), d64(ipc["handle"]),
        int(ipc["size_bytes"]), int(ipc["offset_bytes"]), False, d64(ipc["ref_handle"]),
        int(ipc["ref_offset"]), d64(ipc["event_handle"]), bool(ipc["event_sync"]))
    return t
