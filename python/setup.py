"""Builds the murmur package's compiled parts with the project's own CMake: the extension
(murmur/_murmur*.so) and the `murmur` executable (murmur/_bin/murmur, which the `murmur` console
script, `python -m murmur.run` and murmur.binary() run).

Which CMake build directory (said at the start of the install):
  MURMUR_CMAKE_BUILD_DIR  an existing, configured build directory to build the two targets in;
  else the checkout's build/ when it is configured for this interpreter's Python version (the
                          README's build: the install then only links what is not built yet);
  else a fresh one, build-python/ at the repository root, configured for this interpreter with
                          MURMUR_ARCH as -march (default x86-64-v2: the wheel runs on any x86-64
                          machine of the last decade, not only the one it was built on).
setuptools' own outputs (its build/ and the egg-info) go into that build directory too, so an
install leaves the source tree as it was.
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


def interpreter_of(build):
    """The Python a configured build directory's module is for (its CMakeCache), or None."""
    cache = os.path.join(build, "CMakeCache.txt")
    if not os.path.isfile(cache):
        return None
    m = re.search(r"^Python3_EXECUTABLE:[A-Z]+=(.+)$", open(cache, encoding="utf-8").read(), re.M)
    return m.group(1).strip() if m else None


def same_python(other):
    """Whether `other` (an interpreter's path) has this interpreter's version, so a module
    built for it imports here."""
    try:
        out = subprocess.run([other, "-c", "import sys; print(sys.version_info[:2])"],
                             capture_output=True, text=True, timeout=30).stdout.strip()
    except OSError:
        return False
    return out == str(sys.version_info[:2])


def chosen_build_dir():
    """(directory, whether it must be configured first, why it was chosen)."""
    given = os.environ.get("MURMUR_CMAKE_BUILD_DIR")
    if given:
        if not os.path.isfile(os.path.join(given, "CMakeCache.txt")):
            sys.exit(f"MURMUR_CMAKE_BUILD_DIR={given}: not a configured CMake build directory")
        return given, False, "MURMUR_CMAKE_BUILD_DIR"
    checkout = os.path.join(ROOT, "build")
    python = interpreter_of(checkout)
    if python and same_python(python):
        return checkout, False, f"the checkout's build/, configured for {python}"
    why = (f"the checkout's build/ is for {python}, another Python than {sys.executable}"
           if python else "no configured build/ in the checkout")
    return os.path.join(ROOT, "build-python"), True, f"a fresh build-python/ ({why})"


BUILD, CONFIGURE, WHY = chosen_build_dir()
# setuptools' build tree and egg-info beside CMake's, out of the source tree.
SETUPTOOLS = os.path.join(BUILD, "python-setuptools")
os.makedirs(SETUPTOOLS, exist_ok=True)


def cmake_build_dir():
    if CONFIGURE:
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        subprocess.check_call(["cmake", "-S", ROOT, "-B", BUILD, *generator,
                               "-DCMAKE_BUILD_TYPE=Release",
                               f"-DMURMUR_ARCH={os.environ.get('MURMUR_ARCH', 'x86-64-v2')}",
                               f"-DPython3_EXECUTABLE={sys.executable}"])
    return BUILD


class BuildWithCMake(build_py):
    """build_py, then the extension and the executable from CMake into the package."""

    def run(self):
        super().run()
        print(f"murmur: building with CMake in {BUILD}: {WHY}", file=sys.stderr, flush=True)
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


setup(version=version(), cmdclass={"build_py": BuildWithCMake}, distclass=BinaryDistribution,
      options={"build": {"build_base": os.path.join(SETUPTOOLS, "build")},
               "egg_info": {"egg_base": SETUPTOOLS}})
