"""The optional C decoder of trace events (src/idlehound/trace/_native.c); everything else is in pyproject.toml.

optional=True: where no C compiler is at hand the package installs without it and loads traces the msgspec way
(the same tables, several times slower)."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "idlehound.trace._native",
            ["src/idlehound/trace/_native.c"],
            # generated from trace/_native_columns.py by tools/gen_native_columns.py, and committed
            depends=["src/idlehound/trace/_native_columns.h"],
            optional=True,
            extra_compile_args=["-O2", "-std=c99"],
        )
    ]
)
