"""tinytc.tune on tiny search spaces: it stores, reuses, never keeps a wrong candidate, and
jit and the conv2d recipe use what it stored; invalid tilings and arguments are errors."""

import dataclasses

import numpy as np
import pytest
from tune_support import GEMM, SMALL

import tinytc
from tinytc import reference
from tinytc.compiler import run_pipeline, tiled
from tinytc.gemm import Tiling, check_tiling
from tinytc.recipes import ConvTiling, conv2d, small_gemm_batched
from tinytc.recipes.conv2d_tune import conv_candidates
from tinytc.recipes.tiling import check_conv_tiling
from tinytc.runtime.device import core_info_from_device
from tinytc.target import get_target
from tinytc.tune import cli, measure, search
from tinytc.tune.store import TuningWarning, stored_program_tilings


def _corrupt_all_but(kept):
    """A candidate_ran hook that spoils the result of every candidate not in ``kept``."""

    def hook(candidate, outputs):
        if candidate not in kept:
            outputs[0][0].flat[3] += 1.0

    return hook


def test_program_tuning_stores_and_reuses(device, monkeypatch):
    result = tinytc.tune(GEMM, howmany=3, limit=3, **SMALL)
    assert result.searched and result.path.is_file()
    assert len(result.trials) == 3 and all(t.status == "ok" for t in result.trials)
    assert [t.where for t in result.trials] == ["gemm:0"] * 3
    assert stored_program_tilings(GEMM, device, 2) == result.best

    def no_search(*args):
        raise AssertionError("a stored result must be reused")

    monkeypatch.setattr(search, "_program_trial", no_search)
    again = tinytc.tune(tinytc.parse(GEMM), howmany=3, limit=3, **SMALL)
    assert not again.searched and again.best == result.best
    assert len(again.trials) == 3


def test_jit_uses_the_stored_tiling(device, monkeypatch):
    monkeypatch.setattr(measure, "MARGIN", 1e9)  # any correct candidate wins
    wanted = dict(rows_per_item=1, cols_per_item=1, k_unroll=1, prefetch=0)
    result = tinytc.tune(GEMM, howmany=3, candidates=[wanted], **SMALL)
    (tiling,) = result.best["gemm"]
    assert dataclasses.asdict(tiling).items() >= wanted.items()
    assert result.best != result.default
    kernels = tinytc.jit(GEMM)
    target = core_info_from_device(device)
    assert str(kernels.program) == str(run_pipeline(GEMM, target, tilings=result.best))
    assert str(kernels.program) != str(run_pipeline(GEMM, target))
    rng = np.random.default_rng(0)
    a, b, c = (np.asfortranarray(rng.standard_normal(s), np.float32) for s in
               ((24, 8, 3), (8, 6), (24, 6, 3)))  # fmt: skip
    want = [a.copy(order="F"), b.copy(order="F"), c.copy(order="F")]
    kernels.gemm(a, b, c, howmany=3)
    reference.run(tinytc.parse(GEMM), "gemm", want, 3)
    np.testing.assert_allclose(c, want[2], rtol=1e-5, atol=1e-5)


def test_gemm_recipes_take_their_tuned_program(device, monkeypatch):
    monkeypatch.setattr(measure, "MARGIN", 1e9)
    recipe = small_gemm_batched(7, 5, 6, transA="t")
    wanted = dict(rows_per_item=1, cols_per_item=2, k_unroll=2)
    result = tinytc.tune(recipe, howmany=3, candidates=[wanted], **SMALL)
    assert result.best != result.default
    rng = np.random.default_rng(2)
    a, b, c = (rng.standard_normal(n).astype(np.float32) for n in (6 * 7 * 3, 6 * 5 * 3, 35 * 3))
    # column-major batches: A_i is 6 x 7 (op = t), B_i 6 x 5, C_i 7 x 5
    a3, b3, c3 = (x.reshape(3, -1, r).transpose(0, 2, 1) for x, r in ((a, 6), (b, 6), (c, 7)))
    want = 2 * np.matmul(a3.transpose(0, 2, 1), b3) + 0.5 * c3
    recipe(3, 2.0, a, b, 0.5, c)
    target = core_info_from_device(device)
    lowered = run_pipeline(recipe.source, target, tilings=result.best)
    assert str(recipe._kernels.program) == str(lowered)
    np.testing.assert_allclose(c.reshape(3, 5, 7).transpose(0, 2, 1), want, atol=1e-5)


def test_wrong_program_candidates_are_never_kept(monkeypatch):
    monkeypatch.setattr(measure, "MARGIN", 1e9)  # only the check can reject them
    defaults = []
    original = search._site_space

    def space(site, *args):
        defaults.append(site.default)
        return original(site, *args)

    monkeypatch.setattr(search, "_site_space", space)
    monkeypatch.setattr(measure, "candidate_ran", _corrupt_all_but(defaults))
    result = tinytc.tune(GEMM, howmany=3, limit=3, **SMALL)
    assert [t.status for t in result.trials] == ["wrong"] * 3
    assert result.best == result.default


def test_conv2d_tuning_stores_reuses_and_rejects(monkeypatch):
    monkeypatch.setattr(measure, "MARGIN", 1e9)
    shapes = ((1, 4, 6, 5), (4, 4, 3, 3))
    recipe = conv2d(*shapes, padding=((1, 1), (1, 0)))
    spoilt, good = ConvTiling(16, 1, 2, 2), ConvTiling(8, 1, 4, 4)
    hook = _corrupt_all_but([recipe.tiling, good])
    monkeypatch.setattr(measure, "candidate_ran", hook)
    result = tinytc.tune(recipe, candidates=[spoilt, good], **SMALL)
    assert [t.status for t in result.trials] == ["wrong", "ok"]
    assert result.best == good  # MARGIN makes any correct one win; the spoilt one is not kept
    assert result.trials[1].note.startswith("confirmed: ") and not result.trials[0].note
    # the recipe now takes the stored tiling, and computes the convolution
    again = conv2d(*shapes, padding=((1, 1), (1, 0)))
    assert again.tiling == good
    reused = tinytc.tune(again)
    assert not reused.searched and reused.best == good
    rng = np.random.default_rng(1)
    x, w = (rng.standard_normal(s).astype(np.float32) for s in shapes)
    want = conv2d(*shapes, padding=((1, 1), (1, 0)), tiling=recipe.tiling)(x, w)
    np.testing.assert_allclose(again(x, w), want, atol=1e-5)


def test_candidate_spaces_are_valid():
    cpu = get_target("cpu")
    default = Tiling((16, 1), 2, 3, 4, 1)
    space = search.program_candidates(default, 40, 6, 16, prefetch=2)
    assert space[0] == default and len(set(space)) == len(space) > 50
    assert {t.prefetch for t in space} == {0, 1, 2}
    assert {t.prefetch_ahead for t in space if t.prefetch} == {1, 2, 4, 8}
    assert {t.prefetch_ahead for t in space if not t.prefetch} == {1}
    assert {t.prefetch_level for t in space if t.prefetch} == {0, 1}  # L1 or L2
    assert {t.prefetch_level for t in space if not t.prefetch} == {0}
    assert dataclasses.replace(default, prefetch_level=1) in space  # only the cache differs
    assert all(not check_tiling(t, (16, 1), 16) for t in space)
    assert max(t.rows_per_item for t in space) == 3 and max(t.cols_per_item for t in space) == 6
    problem = conv2d((1, 4, 6, 5), (6, 4, 3, 3), stride=(1, 2)).problem
    base = ConvTiling(16, 1, 6, 4)
    convs = conv_candidates(problem, base, cpu)
    assert convs[0] == base and len(set(convs)) == len(convs) > 50
    assert all(check_conv_tiling(t, cpu) == t and t.kernel != "rows" for t in convs)  # stride_w 2
    assert {t.kernel for t in convs} == {"gather", "columns"}


def test_complex_gemms_try_both_forms_of_a():
    """A complex gemm whose A can be split tries each tiling split and not (a transposed A
    staged where it is not split); a real one, and a complex one of mixed types, do not."""
    cpu = get_target("cpu")

    def space(a: str, b: str, trans: str = "t") -> list:
        text = f"""func @k(%a: memref<{a}x32x32>, %b: memref<{b}x32x32>, %c: memref<c32x32x32>) {{
  gemm.{trans}.n 1.0, %a, %b, 0.0, %c : c32, memref<{a}x32x32>, memref<{b}x32x32>, c32,
      memref<c32x32x32>
}}
"""
        (site,) = search._sites(tiled(text, cpu), cpu)
        return site.candidates(cpu)

    tilings = space("c32", "c32")
    assert tilings[0].split_a and not tilings[0].stage_a  # the default (split_pays)
    assert {(t.split_a, t.stage_a) for t in tilings} == {(True, False), (False, True)}
    assert len([t for t in tilings if t.split_a]) == len(tilings) // 2
    unstaged = {(t.split_a, t.stage_a) for t in space("c32", "c32", "n")}
    assert unstaged == {(False, False), (True, False)}
    assert not any(t.split_a for t in space("f32", "c32"))


def test_invalid_tilings_are_errors():
    with pytest.raises(tinytc.CompilationError, match="bad tiling candidate: rows per item"):
        tinytc.tune(GEMM, howmany=2, candidates=[dict(rows_per_item=0)], **SMALL)
    with pytest.raises(tinytc.CompilationError, match="5 x 13 accumulators per work-item"):
        tinytc.tune(GEMM, howmany=2, candidates=[dict(rows_per_item=5, cols_per_item=13)])
    with pytest.raises(tinytc.ArgumentError, match="unexpected keyword"):
        tinytc.tune(GEMM, howmany=2, candidates=[dict(rows=1)], **SMALL)
    recipe = conv2d((1, 4, 6, 5), (4, 4, 3, 3), stride=(1, 2))
    with pytest.raises(tinytc.ArgumentError, match="subgroup size 3"):
        tinytc.tune(recipe, candidates=[dict(subgroup_size=3, rows_per_item=1,
                                             cols_per_tile=1, k_chunk=1)])  # fmt: skip
    with pytest.raises(tinytc.ArgumentError, match="stride_w 1"):
        tinytc.tune(recipe, candidates=[ConvTiling(16, 1, 4, 4, "rows")])
    # a stored or given tiling that does not fit the kernel is refused by lower-linalg
    with pytest.raises(tinytc.CompilationError, match="bad tiling for gemm: work group"):
        run_pipeline(GEMM, "cpu", tilings={"gemm": [Tiling((8, 1), 1, 1)]})


def test_invalid_arguments_are_errors():
    with pytest.raises(tinytc.ArgumentError, match="howmany"):
        tinytc.tune(GEMM)
    with pytest.raises(tinytc.ArgumentError, match="program or a recipe"):
        tinytc.tune(42, howmany=1)
    with pytest.raises(tinytc.ArgumentError, match="budget"):
        tinytc.tune(GEMM, howmany=1, budget=-1)


def test_a_corrupt_store_is_searched_again(device, capsys):
    first = tinytc.tune(GEMM, howmany=2, limit=1, **SMALL)
    first.path.write_text("{not json")
    with pytest.warns(TuningWarning, match="deleted the damaged tuning record"):
        assert stored_program_tilings(GEMM, device, 2) is None
    assert not first.path.exists()
    assert tinytc.tune(GEMM, howmany=2, limit=1, progress=True, **SMALL).searched
    assert "tuning done: " in capsys.readouterr().err  # the progress, off a terminal


def test_command_line(tmp_path, capsys):
    source = tmp_path / "gemm.ir"
    source.write_text(GEMM)
    args = [str(source), "--howmany", "2", "--limit", "2", "--repeat", "1", "--report"]
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    assert "program: 2 candidates tried" in out and "best candidates" in out
    assert "gemm:0" in out
    assert cli.main([str(source), "--howmany", "2"]) == 0
    assert "stored in" in capsys.readouterr().out
    assert cli.main([str(source)]) == 1
    assert "--howmany" in capsys.readouterr().err
    assert cli.main(["conv2d", "--input", "1,4,6,5"]) == 1
    assert "--input and --filter" in capsys.readouterr().err
    source.write_text(GEMM.replace("%b, 1.0", "%x, 1.0"))
    assert cli.main([str(source), "--howmany", "2"]) == 1
    err = capsys.readouterr().err
    assert "gemm.ir:5." in err and "%x is not defined" in err
