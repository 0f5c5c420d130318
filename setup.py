"""Builds libsymmcomm_c.so with the project's CMake and puts it inside the `symmcomm` package.

Driven by pyproject.toml (setuptools, as vLLM drives CMake): `pip install .` or
`pip wheel --no-build-isolation .` from the repository root. The CMake build and setuptools'
intermediate files go to build/python-wheel/ (ignored), never into python/. Where the Python
running the build has a CUDA PyTorch (`--no-build-isolation` in the engine's environment), the
C++ torch operators (libsymmcomm_torch.so, built against that PyTorch) go into the package too.
Environment: SYMMCOMM_CMAKE_ARGS (extra CMake arguments, e.g. -DNCCL_ROOT=... or
-DSYMMCOMM_TORCH_OPS=OFF), SYMMCOMM_BUILD_JOBS.
"""
import os
import re
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.egg_info import egg_info

ROOT = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.join(ROOT, "build", "python-wheel")


def project_version():
    """The version of project() in CMakeLists.txt (one source of truth)."""
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        m = re.search(r"project\(\s*symmcomm\s+VERSION\s+([0-9.]+)", f.read())
    if not m:
        raise RuntimeError("CMakeLists.txt: no project(symmcomm VERSION ...)")
    return m.group(1)


def torch_ops_configured(cmake_build):
    """Whether the CMake configure made the libsymmcomm_torch.so target (a CUDA PyTorch found)."""
    with open(os.path.join(cmake_build, "CMakeCache.txt")) as f:
        return any(line.strip() == "SYMMCOMM_TORCH_OPS_BUILT:INTERNAL=ON" for line in f)


class BuildWithLibrary(build_py):
    """build_py, then the C library built by CMake copied into the package as libsymmcomm_c.so
    (the file the package loads first, beside its own __init__.py), and libsymmcomm_torch.so
    beside it where CMake found a CUDA PyTorch for this Python."""

    def run(self):
        super().run()
        cmake_build = os.path.join(BUILD, "cmake")
        args = ["cmake", "-S", ROOT, "-B", cmake_build, "-DCMAKE_BUILD_TYPE=Release",
                "-DSYMMCOMM_BUILD_TESTS=OFF", "-DSYMMCOMM_BUILD_BENCH=OFF",
                "-DSYMMCOMM_BUILD_EXAMPLES=OFF", "-DSYMMCOMM_WITH_MPI=OFF",
                "-DSYMMCOMM_TORCH_PYTHON=" + sys.executable]
        if shutil.which("ninja"):
            args += ["-G", "Ninja"]
        args += os.environ.get("SYMMCOMM_CMAKE_ARGS", "").split()
        subprocess.check_call(args)
        jobs = os.environ.get("SYMMCOMM_BUILD_JOBS", str(os.cpu_count() or 2))
        libraries = ["symmcomm_c"]
        if torch_ops_configured(cmake_build):
            libraries.append("symmcomm_torch")
        for name in libraries:
            subprocess.check_call(["cmake", "--build", cmake_build, "--target", name,
                                   "--parallel", jobs])
            built = os.path.realpath(os.path.join(cmake_build, "src", "lib%s.so" % name))
            target = os.path.join(self.build_lib, "symmcomm", "lib%s.so" % name)
            shutil.copyfile(built, target)  # the file itself, not the soname symlinks
            os.chmod(target, 0o755)


class EggInfoOutsideTheTree(egg_info):
    """Keeps symmcomm.egg-info out of python/ (in build/python-wheel/)."""

    def initialize_options(self):
        super().initialize_options()
        os.makedirs(BUILD, exist_ok=True)
        self.egg_base = os.path.relpath(BUILD, ROOT)


try:
    from wheel.bdist_wheel import bdist_wheel

    class PlatformWheel(bdist_wheel):
        """The wheel holds a compiled library: tag it for this platform, not as pure Python."""

        def finalize_options(self):
            super().finalize_options()
            self.root_is_pure = False

        def get_tag(self):
            _, _, plat = super().get_tag()
            return "py3", "none", plat

    wheel_commands = {"bdist_wheel": PlatformWheel}
except ImportError:  # no `wheel` in this environment: say how to get one
    from setuptools import Command

    class NoWheel(Command):
        """Stands for bdist_wheel where `wheel` is missing (pip asks for one even for a plain
        `pip install .`): names the fix instead of setuptools' "invalid command"."""

        user_options = []

        def initialize_options(self):
            pass

        def finalize_options(self):
            pass

        def egg2dist(self, *args):  # setuptools' dist_info (pip's metadata step) calls this
            self.run()

        def run(self):
            raise SystemExit(
                "symmcomm: building needs the Python package 'wheel', which %s lacks. Offline on "
                "Debian/Ubuntu, use the system's setuptools and wheel: `/usr/bin/python3 -m venv "
                "--system-site-packages env && env/bin/pip install --no-build-isolation .` "
                "(apt-get install python3-wheel if /usr/bin/python3 lacks it too); with a package "
                "index: `pip install wheel` first." % sys.executable)

    wheel_commands = {"bdist_wheel": NoWheel}

setup(version=project_version(),
      cmdclass={"build_py": BuildWithLibrary, "egg_info": EggInfoOutsideTheTree, **wheel_commands})
