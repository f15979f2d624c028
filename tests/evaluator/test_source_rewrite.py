"""The CUDA -> g++ source rewrite of the CPU emulator: launches and __shared__ declarations."""

import re
import shutil
import subprocess

import pytest

from evaluator import shim_build
from evaluator.source_rewrite import rewrite_for_cpu


def launch_parts(text: str) -> list[str]:
    """The cuco_launch_kernel(...); calls of a rewritten text (balanced parentheses)."""
    calls = []
    for m in re.finditer(r"cuco_launch_kernel\(", text):
        depth, j = 0, m.end() - 1
        while True:
            depth += {"(": 1, ")": -1}.get(text[j], 0)
            if depth == 0:
                break
            j += 1
        calls.append(text[m.start() : j + 1] + ";")
    return calls


# ----------------------------------------------------------------------------- launches


def test_two_value_launch():
    out = rewrite_for_cpu("void f() { k<<<4, 128>>>(a, b); }")
    assert launch_parts(out) == [
        "cuco_launch_kernel([=](auto... cuco_a) { k(cuco_a...); }, dim3(4), dim3( 128), (size_t)(0), "
        "(cudaStream_t)(0), a, b);"
    ]


def test_four_value_launch_keeps_smem_and_stream():
    out = rewrite_for_cpu("k<<<grid, block, smem, stream>>>(x);")
    assert "dim3(grid), dim3( block), (size_t)( smem), (cudaStream_t)( stream), x)" in out


def test_three_value_launch_defaults_the_stream():
    out = rewrite_for_cpu("k<<<g, b, 1024>>>(x);")
    assert "(size_t)( 1024), (cudaStream_t)(0), x)" in out


def test_launch_without_arguments():
    out = rewrite_for_cpu("k<<<1, 1>>>();")
    assert out == "cuco_launch_kernel([=](auto... cuco_a) { k(cuco_a...); }, dim3(1), dim3( 1), (size_t)(0), " \
                  "(cudaStream_t)(0));"


@pytest.mark.parametrize("callee", ["ns::k", "::k", "a::b::kern", "k<float, 4>", "ns::k<T, (A > B)>",
                                    "k<Traits<float>, 2>", "ns::template k<T>", "(kfn)"])
def test_callee_forms(callee):
    out = rewrite_for_cpu(f"void f() {{ {callee}<<<1, 32>>>(p); }}")
    assert f"{{ {callee}(cuco_a...); }}" in out
    assert out.startswith("void f() { cuco_launch_kernel(")


def test_config_with_nested_parens_casts_and_templates():
    src = "k<<<dim3((n + 255) / 256, 1), THREADS[idx], bytes_for(cfg[0], 2), static_cast<cudaStream_t>(s)>>>(x);"
    out = rewrite_for_cpu(src)
    assert "dim3(dim3((n + 255) / 256, 1)), dim3( THREADS[idx]), (size_t)( bytes_for(cfg[0], 2))," in out
    assert "(cudaStream_t)( static_cast<cudaStream_t>(s)), x)" in out


def test_config_with_template_commas():
    out = rewrite_for_cpu("k<<<grid_of<int, 2>::value, 32>>>(x);")
    assert "dim3(grid_of<int, 2>::value), dim3( 32)" in out


def test_config_with_comparisons_is_not_a_template():
    out = rewrite_for_cpu("k<<<n < 4 ? 1 : 2, m > 3 ? 64 : 32>>>(x);")
    assert "dim3(n < 4 ? 1 : 2), dim3( m > 3 ? 64 : 32)" in out


def test_arguments_with_nested_calls_and_strings():
    src = 'k<<<1, 1>>>(f(a, g(b)), "x, y", arr[i], (float*)p);'
    out = rewrite_for_cpu(src)
    assert out.endswith(', f(a, g(b)), "x, y", arr[i], (float*)p);')


def test_null_argument_becomes_nullptr():
    out = rewrite_for_cpu("k<<<1, 1>>>(p, NULL, n, NULLABLE);")
    assert out.endswith(", p, nullptr, n, NULLABLE);")


def test_multiline_launch_keeps_line_count():
    src = "void f() {\n  kern\n    <<<grid,\n       block, 0, s>>>\n    (a,\n     b);\n  next();\n}\n"
    out = rewrite_for_cpu(src)
    assert out.count("\n") == src.count("\n")
    assert out.splitlines()[6] == "  next();"


def test_launch_inside_a_macro_keeps_continuations():
    src = "#define LAUNCH(kern, n) \\\n  kern<<<n, 32>>>(out)\nvoid f() { LAUNCH(k, 4); }\n"
    out = rewrite_for_cpu(src)
    assert "cuco_launch_kernel([=](auto... cuco_a) { kern(cuco_a...); }, dim3(n), dim3( 32)" in out
    assert out.count("\n") == src.count("\n") and out.startswith("#define LAUNCH(kern, n) \\\n")


def test_several_launches_and_spacing():
    src = "a<<<1,2>>>(x); b <<< 3 , 4 >>> ( y );"
    parts = launch_parts(rewrite_for_cpu(src))
    assert len(parts) == 2 and "{ a(cuco_a...); }" in parts[0] and "{ b(cuco_a...); }" in parts[1]
    assert "dim3( 3 ), dim3( 4 )" in parts[1]


@pytest.mark.parametrize("src", [
    "int x = a << 2; int y = b >> 3; int z = v<<1;",
    "std::vector<std::vector<int>> v; auto w = x >> 1 >> 2;",
    '// k<<<1, 1>>>(x);\nconst char* s = "k<<<1, 1>>>(x)";',
    "/* k<<<\n1, 1>>>(x); */ int a;",
    "char c = '<'; char d = '>'; int big = 1'000'000;",
    'auto r = R"(k<<<1,1>>>(x))";',
    "out << value >>= 2;",
])
def test_things_that_are_not_launches_stay(src):
    assert rewrite_for_cpu(src) == src


def test_comment_inside_a_launch_is_tolerated():
    out = rewrite_for_cpu("k<<<1 /* grid, blocks */, 2>>>(x);")
    assert "dim3(1 /* grid, blocks */), dim3( 2)" in out


@pytest.mark.parametrize("src, line", [
    ("int a;\nk<<<1, 2;\n", 2),
    ("\n\nk<<<1, 2>>> x;", 3),
    ("k<<<1>>>(x);", 1),
    ("k<<<1, 2, 3, 4, 5>>>(x);", 1),
    ("void f() {\n  <<<1, 2>>>(x);\n}", 2),
    ("k<<<1, 2>>>(x;", 1),
])
def test_unparseable_launch_raises_with_the_line(src, line):
    with pytest.raises(ValueError, match=f"line {line}"):
        rewrite_for_cpu(src)


# ----------------------------------------------------------------------------- __shared__


def test_static_shared_in_a_kernel():
    src = "__global__ void k() {\n  __shared__ float tile[32][33];\n  tile[0][0] = 1;\n}\n"
    out = rewrite_for_cpu(src)
    line = out.splitlines()[1]
    assert "typedef float cuco_shT_0_0[32][33];" in line
    assert "static cuco_shared_site cuco_shS_0_0;" in line
    assert "cuco_shT_0_0& tile = *(cuco_shT_0_0*)cuco_shared_alloc(&cuco_shS_0_0, sizeof(cuco_shT_0_0), 0," in line
    assert out.count("\n") == src.count("\n") and "__shared__" not in out


@pytest.mark.parametrize("decl", ["__shared__ __align__(16) float s[8];", "__align__(16) __shared__ float s[8];",
                                  "__shared__ alignas(16) float s[8];",
                                  "__shared__ __attribute__((aligned(16))) float s[8];"])
def test_alignment_is_kept(decl):
    out = rewrite_for_cpu(f"void k() {{ {decl} }}")
    assert "sizeof(cuco_shT_0_0), (size_t)(16), alignof(cuco_shT_0_0))" in out
    assert "typedef float cuco_shT_0_0[8];" in out and "aligned" not in out and "__align__" not in out


def test_scalar_volatile_and_template_types():
    src = ("template <typename T, int N> __global__ void k() {\n"
           "  volatile __shared__ int flag;\n"
           "  __shared__ Pair<T, float> buf[N][2 * N];\n"
           "  static __shared__ typename Traits<T>::type acc[N];\n}\n")
    out = rewrite_for_cpu(src)
    assert "typedef volatile  int cuco_shT_0_0;" in out.replace("volatile   int", "volatile  int")
    assert "cuco_shT_0_0& flag =" in out
    assert "typedef Pair<T, float> cuco_shT_1_0[N][2 * N];" in out
    assert "typedef typename Traits<T>::type cuco_shT_2_0[N];" in out
    assert "static __shared__" not in out and out.count("\n") == src.count("\n")


def test_several_declarators():
    out = rewrite_for_cpu("void k() { __shared__ float a[4], b[8], *p; }")
    assert "typedef float cuco_shT_0_0[4];" in out
    assert "typedef float cuco_shT_0_1[8];" in out
    assert "typedef float * cuco_shT_0_2;" in out and "cuco_shT_0_2& p =" in out


def test_extern_shared_in_a_function_is_the_dynamic_pointer():
    out = rewrite_for_cpu("__global__ void k() {\n  extern __shared__ __align__(16) unsigned char smem[];\n}")
    assert "typedef unsigned char cuco_shT_0_0; cuco_shT_0_0* smem = (cuco_shT_0_0*)cuco_dynamic_smem();" in out


def test_extern_shared_with_inner_dimension():
    out = rewrite_for_cpu("void k() { extern __shared__ float rows[][32]; }")
    assert "typedef float cuco_shT_0_0[32]; cuco_shT_0_0* rows = (cuco_shT_0_0*)cuco_dynamic_smem();" in out


def test_file_scope_shared_uses_a_macro_and_restores_line_numbers():
    src = ("#include <x>\n"
           "extern __shared__ float dsm[];\n"
           "__shared__ int counter; int after = 1;\n"
           "__global__ void k() { dsm[0] = counter; }\n")
    out = rewrite_for_cpu(src)
    assert "static inline cuco_shT_0_0* cuco_shF_0_0() { return (cuco_shT_0_0*)cuco_dynamic_smem(); }" in out
    assert "\n#define dsm (cuco_shF_0_0())\n#line 2\n" in out
    assert "\n#define counter (cuco_shF_1_0())\n#line 3\n int after = 1;\n" in out
    assert out.endswith("__global__ void k() { dsm[0] = counter; }\n")


def test_file_scope_shared_inside_a_namespace():
    out = rewrite_for_cpu('namespace a {\n__shared__ float s[4];\n}\nextern "C" int f() { return 0; }')
    assert "static inline cuco_shT_0_0& cuco_shF_0_0()" in out and "#define s (cuco_shF_0_0())" in out


def test_shared_after_a_pragma_line():
    src = "void k() {\n#pragma unroll 1\n  __shared__ float s[4];\n}"
    out = rewrite_for_cpu(src)
    assert "#pragma unroll 1\n  typedef float cuco_shT_0_0[4];" in out


@pytest.mark.parametrize("src", [
    "// __shared__ float s[4];\nint x;",
    'const char* s = "__shared__ float q[4];";',
    "#define SMEM __shared__\nint y;",
    "int my__shared__thing = 1;",
])
def test_shared_that_is_not_a_declaration_stays(src):
    assert rewrite_for_cpu(src) == src


def test_shared_in_a_macro_body_is_rewritten_on_its_line():
    src = "#define TILE(name) __shared__ float name[16];\nvoid k() { TILE(a) }\n"
    out = rewrite_for_cpu(src)
    assert out.startswith("#define TILE(name) typedef float cuco_shT_0_0[16];")
    assert out.count("\n") == src.count("\n")


# ----------------------------------------------------------------------------- g++ accepts it


def test_rewritten_source_compiles_against_the_shim(tmp_path):
    if not shutil.which("g++"):
        pytest.skip("g++ not installed")
    src = """
#include "cuco_comm.h"
extern __shared__ float dyn[];
namespace ns { template <typename T, int N> __global__ void scale(T* p) {
  __shared__ __align__(16) T tile[N][N + 1];
  __shared__ int flag, count[2];
  tile[threadIdx.x % N][0] = p[threadIdx.x]; flag = 1; count[0] = 0; dyn[0] = (float)flag;
  __syncthreads();
  p[threadIdx.x] = tile[0][0] * (T)N;
} }
template <typename T> __global__ void deduced(T* p, const T* q) { p[0] = q ? q[0] : (T)1; }
extern "C" int cuco_run(const cuco_ctx* ctx, cudaStream_t stream) {
  float* p = (float*)ctx->out[0];
  ns::scale<float, 4><<<dim3(1, 1), 32, 64 * sizeof(float), stream>>>(p);
  deduced<<<1, 1, 0,
            stream>>>(p, (const float*)p);
  deduced<float><<<1, 1, 0, stream>>>(p, NULL);
  return cudaGetLastError() != cudaSuccess;
}
"""
    path = tmp_path / "c.cpp"
    path.write_text(rewrite_for_cpu(src))
    res = subprocess.run(["g++", "-std=c++17", "-fsyntax-only", "-DCUCO_COMM_CPU", "-I", str(shim_build.SHIM_INCLUDE),
                          "-I", str(shim_build.RUNTIME_INCLUDE), str(path)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
