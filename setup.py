"""Builds hhg._hhg with CMake, the one description of how hhg is compiled.

setuptools calls build_ext; it configures the repository with
-DHHG_BUILD_PYTHON=ON for the interpreter running the build (sys.executable:
inside a venv that is the venv's python), builds the target _hhg and copies it
where setuptools expects the extension. Metadata is in pyproject.toml.
Environment: CMAKE_BUILD_PARALLEL_LEVEL (default: every core), HHG_CMAKE_ARGS
(extra arguments for the configure step).
"""
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        target = Path(self.get_ext_fullpath(ext.name)).resolve()
        build = Path(self.build_temp).resolve() / "cmake"
        build.mkdir(parents=True, exist_ok=True)
        configure = [
            "cmake", "-S", str(ROOT), "-B", str(build),
            "-DCMAKE_BUILD_TYPE=Release",
            f"-DPython_EXECUTABLE={sys.executable}",
            "-DHHG_BUILD_PYTHON=ON",
            "-DHHG_BUILD_TESTS=OFF", "-DHHG_BUILD_APPS=OFF", "-DHHG_BUILD_BENCH=OFF",
        ] + shlex.split(os.environ.get("HHG_CMAKE_ARGS", ""))
        subprocess.check_call(configure)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 1))
        subprocess.check_call(["cmake", "--build", str(build), "--target", "_hhg", "-j", jobs])
        built = sorted((build / "python").glob("_hhg*" + Path(target).suffix))
        if not built:
            raise RuntimeError(f"hhg: CMake built no _hhg module in {build / 'python'}")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built[0], target)


setup(ext_modules=[CMakeExtension("hhg._hhg")], cmdclass={"build_ext": CMakeBuild})
