"""Build script for the optional C accelerators of data_gen (data_gen/native/).

All metadata lives in setup.cfg. Each module below has a pure-Python
equivalent that gives byte-identical output; a machine without a C compiler
gets a warning at install time and the slower Python path at run time
(`python -m data_gen.native` says which is in use).
"""
import glob
import os

from setuptools import Extension, setup

NATIVE = "data_gen/native"
# Each module's main source is NATIVE/_NAME.c (data_gen.native.module_names reads the same).
NATIVE_MODULES = sorted(os.path.basename(path)[:-2] for path in glob.glob(f"{NATIVE}/_*.c"))

# Modules built from several translation units: data_gen/native/<name>.c (the Python
# side and module init) plus these parts and their private header, beside it.
NATIVE_PARTS = {
    "_jieba": (["jieba_dict.c", "jieba_route.c", "jieba_hmm.c"], ["jieba.h"]),
    "_records": (["records_input.c", "records_mask.c", "records_encode.c"], ["records.h"]),
    "_xlnet": (["xlnet_mask.c", "xlnet_encode.c"], ["xlnet.h"]),
}


# Header-only code more than one module compiles (Python's random driven from C).
SHARED_HEADERS = ["py_random.h"]


def native_extension(name):
    parts, headers = NATIVE_PARTS.get(name, ([], []))
    return Extension(f"data_gen.native.{name}",
                     [f"{NATIVE}/{name}.c"] + [f"{NATIVE}/{part}" for part in parts],
                     include_dirs=[NATIVE] if parts else [],
                     depends=[f"{NATIVE}/{header}" for header in headers + SHARED_HEADERS],
                     optional=True, extra_compile_args=["-O2", "-std=c99", "-Wall"])


setup(ext_modules=[native_extension(name) for name in NATIVE_MODULES])
