"""Builds the murmur package's compiled parts with the project's own CMake: the extension
(murmur/_murmur*.so) and the `murmur` executable (murmur/_bin/murmur, which the `murmur` console
script, `python -m murmur.run` and murmur.binary() run).

Environment:
  MURMUR_CMAKE_BUILD_DIR  an existing, configured build directory to build the two targets in
                          (e.g. the checkout's build/); else a fresh one, build-python/ at the
                          repository root, configured for this interpreter.
  MURMUR_ARCH             -march for a fresh build directory (default x86-64-v2: the wheel runs
                          on any x86-64 machine of the last decade, not only the one it was
                          built on).
"""

import glob
import os
import re
import shutil
import subprocess
import sys

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def version():
    """The project's version, as CMake (and `murmur --version`) has it."""
    text = open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8").read()
    return re.search(r"project\(murmur VERSION ([0-9.]+)", text).group(1)


def cmake_build_dir():
    given = os.environ.get("MURMUR_CMAKE_BUILD_DIR")
    if given:
        if not os.path.isfile(os.path.join(given, "CMakeCache.txt")):
            sys.exit(f"MURMUR_CMAKE_BUILD_DIR={given}: not a configured CMake build directory")
        return given
    build = os.path.join(ROOT, "build-python")
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    subprocess.check_call(["cmake", "-S", ROOT, "-B", build, *generator,
                           "-DCMAKE_BUILD_TYPE=Release",
                           f"-DMURMUR_ARCH={os.environ.get('MURMUR_ARCH', 'x86-64-v2')}",
                           f"-DPython3_EXECUTABLE={sys.executable}"])
    return build


class BuildWithCMake(build_py):
    """build_py, then the extension and the executable from CMake into the package."""

    def run(self):
        super().run()
        build = cmake_build_dir()
        subprocess.check_call(["cmake", "--build", build, "--target", "murmur", "murmur_python"])
        package = os.path.join(self.build_lib, "murmur")
        extensions = glob.glob(os.path.join(build, "python", "murmur", "_murmur*.so"))
        if len(extensions) != 1:
            sys.exit(f"expected one murmur/_murmur*.so in {build}/python, found {extensions}: "
                     "is pybind11 installed (ops/install-deps.sh)?")
        shutil.copy2(extensions[0], package)
        os.makedirs(os.path.join(package, "_bin"), exist_ok=True)
        shutil.copy2(os.path.join(build, "murmur"), os.path.join(package, "_bin", "murmur"))


class BinaryDistribution(Distribution):
    """A wheel for this platform and Python: it holds compiled code."""

    def has_ext_modules(self):
        return True


setup(version=version(), cmdclass={"build_py": BuildWithCMake}, distclass=BinaryDistribution)
