"""Build of the optional C scanner; everything else is in pyproject.toml.

``optional=True``: without a C compiler the install still succeeds, and gwtools reads
bodies with its msgspec path (tests/library/test_fastjson.py fails loudly in that case).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "gwtools._fastjson",
            ["gwtools/_fastjson.c"],
            optional=True,
            extra_compile_args=["-O2", "-Wall", "-Wextra", "-Wno-missing-field-initializers"],
        )
    ]
)
