"""Read the plain data (numbers, strings, numpy arrays, dicts and lists of them) that a
``torch.save`` file holds, without torch and without unpickling arbitrary objects.

MAG240M ships its node counts and split as ``meta.pt`` and ``split_dict.pt``. A pickle may name
any importable function to call while loading, so the file is read by an unpickler that allows
exactly the names numpy's array pickles use and refuses everything else, including
torch tensors (which the files in question do not hold).
"""

from __future__ import annotations

import codecs
import importlib
import io
import pickle
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from remotegnn.errors import ConvertError

_MULTIARRAY = "numpy._core.multiarray" if hasattr(np, "_core") else "numpy.core.multiarray"  # numpy 2, else 1.x
_reconstruct = importlib.import_module(_MULTIARRAY)._reconstruct

# numpy 1.x pickles name numpy.core, numpy 2 numpy._core: both mean the same function
ALLOWED = {
    ("numpy.core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy._core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
    ("_codecs", "encode"): codecs.encode,  # how pickle protocol 2 spells an array's raw bytes
}


class _PlainUnpickler(pickle.Unpickler):
    def __init__(self, data: bytes, what: str):
        super().__init__(io.BytesIO(data))
        self.what = what

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in ALLOWED:
            raise ConvertError(f"{self.what} holds a {module}.{name}, which is not read (only numbers and arrays)")
        return ALLOWED[(module, name)]

    def persistent_load(self, pid: Any) -> Any:
        raise ConvertError(f"{self.what} holds torch tensors; only numbers and numpy arrays are read")


def load_plain(path: Path) -> Any:
    """The object in a ``torch.save`` file (the zip format torch has written since 1.6)."""
    try:
        with zipfile.ZipFile(path) as archive:
            pickles = [n for n in archive.namelist() if n.endswith("/data.pkl") or n == "data.pkl"]
            if len(pickles) != 1:
                raise ConvertError(f"{path} is not a torch.save file (no data.pkl inside)")
            data = archive.read(pickles[0])
    except FileNotFoundError:
        raise ConvertError(f"{path} does not exist") from None
    except (zipfile.BadZipFile, OSError) as exc:
        raise ConvertError(f"{path} is not a torch.save zip file ({exc}); pass the split with --split-dir") from None
    try:
        return _PlainUnpickler(data, str(path)).load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError) as exc:
        raise ConvertError(f"{path} is corrupt ({exc})") from None
