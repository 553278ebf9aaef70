"""`pip install .`: builds the extension vdnn._vdnn with this tree's CMake and packages it with
python/vdnn/__init__.py and the shipped models and device profiles (vdnn/data), so an installed
vdnn finds them anywhere.

The CMake build goes to build/pip/cmake (configured with -DPython_EXECUTABLE=<the installing
Python>, tests off) and builds only the target vdnn_python; VDNN_CMAKE_BUILD_DIR=<dir> uses an
existing, configured build tree instead (e.g. build/, which `cmake --build build` made)."""
import glob
import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

ROOT = os.path.dirname(os.path.abspath(__file__))


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = os.environ.get("VDNN_CMAKE_BUILD_DIR") or os.path.join(ROOT, "build", "pip", "cmake")
        if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
            subprocess.check_call(["cmake", "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
                                   "-DVDNN_PYTHON=ON", "-DVDNN_BUILD_TESTS=OFF",
                                   f"-DPython_EXECUTABLE={sys.executable}"])
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


setup(ext_modules=[CMakeExtension("vdnn._vdnn")], cmdclass={"build_ext": CMakeBuild, "build_py": BuildPyWithData},
      options={"build": {"build_base": os.path.join("build", "pip")}, "egg_info": {"egg_base": os.path.join("build", "pip")}})
