"""Build script for the optional C accelerators of data_gen.

All metadata lives in setup.cfg. Each module below has a pure-Python
equivalent that gives byte-identical output; a machine without a C compiler
gets a warning at install time and the slower Python path at run time
(`python -m data_gen.native` says which is in use).
"""
from setuptools import Extension, setup

NATIVE_MODULES = ("_native_jieba", "_native_tokenize", "_native_records", "_native_instances",
                  "_native_tfrecord")

setup(ext_modules=[
    Extension(f"data_gen.{name}", [f"data_gen/{name}.c"], optional=True,
              extra_compile_args=["-O2", "-std=c99", "-Wall"])
    for name in NATIVE_MODULES
])
