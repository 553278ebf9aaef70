"""`pip install .`: builds the extension vdnn._vdnn with this tree's CMake and packages it with
python/vdnn/__init__.py and the shipped models and device profiles (vdnn/data), so an installed
vdnn finds them anywhere. Works under a plain venv (pip fetches setuptools and pybind11 into its
isolated build environment) and with Debian's python3 (offline: --no-build-isolation, Debian's
pybind11-dev); CMake, a C++20 compiler and the libraries of scripts/setup.sh come from the system.

The CMake build goes to build-pip/ (Release, unity batches, tests off, -DPython_EXECUTABLE=<the
installing Python>) and builds only the target vdnn_python: the library is compiled once there, and a
later install only relinks. build-pip/ sits beside build/ (one folder deep, as scripts/setup.sh's
build), so ccache, where installed, serves files compiled by an earlier build of any clone on the
machine. VDNN_CMAKE_BUILD_DIR=<dir> uses an existing, configured build tree instead (e.g. build/,
configured with the Python module for this Python's version). How long each takes:
docs/design/python.md ("Installing"), measured by scripts/pip_check.sh.

The version is CMakeLists.txt's project() version, the one source of truth (vdnn.__version__ and
`vdnn --version` give the same)."""
import glob
import os
import re
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

ROOT = os.path.dirname(os.path.abspath(__file__))
# setuptools' own outputs (build/lib..., vdnn.egg-info) go under build/pip: created here, since
# egg_info refuses an egg_base that does not exist yet (a fresh clone has no build/).
SETUPTOOLS_DIR = os.path.join("build", "pip")
os.makedirs(os.path.join(ROOT, SETUPTOOLS_DIR), exist_ok=True)


def project_version():
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        found = re.search(r"project\(vdnn\s+VERSION\s+([0-9][0-9.]*)", f.read())
    if not found:
        raise RuntimeError("CMakeLists.txt: no `project(vdnn VERSION x.y.z ...)` to take the version from")
    return found.group(1)


def cmake_configure_args(build_dir):
    args = ["cmake", "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release", "-DVDNN_PYTHON=ON",
            "-DVDNN_BUILD_TESTS=OFF", "-DVDNN_UNITY_BUILD=ON", f"-DPython_EXECUTABLE={sys.executable}"]
    try:  # PyPI's pybind11 in pip's build environment; Debian's pybind11-dev is found without it
        import pybind11
        args.append(f"-Dpybind11_DIR={pybind11.get_cmake_dir()}")
    except ImportError:
        pass
    return args


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = os.environ.get("VDNN_CMAKE_BUILD_DIR") or os.path.join(ROOT, "build-pip")
        if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
            subprocess.check_call(cmake_configure_args(build_dir))
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
        subprocess.check_call(["cmake", "--build", build_dir, "--target", "vdnn_python", "-j", jobs])
        built = glob.glob(os.path.join(build_dir, "python", "vdnn", "_vdnn*.so"))
        if len(built) != 1:
            raise RuntimeError(f"expected one _vdnn*.so under {build_dir}/python/vdnn, found {built}")
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(built[0], target)


class BuildPyWithData(build_py):
    """Copies models/*.json and profiles/**/*.json into the package as vdnn/data."""

    def run(self):
        super().run()
        data = os.path.join(self.build_lib, "vdnn", "data")
        for folder in ("models", "profiles"):
            for path in glob.glob(os.path.join(ROOT, folder, "**", "*.json"), recursive=True):
                target = os.path.join(data, os.path.relpath(path, ROOT))
                os.makedirs(os.path.dirname(target), exist_ok=True)
                shutil.copyfile(path, target)


setup(version=project_version(), ext_modules=[CMakeExtension("vdnn._vdnn")],
      cmdclass={"build_ext": CMakeBuild, "build_py": BuildPyWithData},
      options={"build": {"build_base": SETUPTOOLS_DIR}, "egg_info": {"egg_base": SETUPTOOLS_DIR}})
