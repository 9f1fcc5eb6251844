"""TileLang's `pass_configs` keys and what each means here.

    @tilelang.jit(out_idx=[-1], pass_configs={tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: True})

`options_for(pass_configs)` turns a dict into this compiler's options: the keys that mean
something here set one (`EFFECTS`); TileLang's GPU-only keys are accepted and ignored; an
unknown key is an error (TL0781), as it is in TileLang.
"""
from __future__ import annotations

from enum import Enum


class PassConfigKey(str, Enum):
    """TileLang's pass configuration keys (their string values are what TileLang uses)."""
    # applied here
    TL_ENABLE_FAST_MATH = "tl.enable_fast_math"
    TL_DISABLE_SHARED_MEMORY_REUSE = "tl.disable_shared_memory_reuse"
    # GPU-only: accepted, no effect on the CPU or tcsim
    TL_SIMPLIFY = "tl.Simplify"
    TL_DISABLE_BUFFER_INIT_CHECK = "tl.disable_buffer_init_check"
    TL_DISABLE_DATA_RACE_CHECK = "tl.disable_data_race_check"
    TL_DISABLE_PRELOWER_SEMANTIC_CHECK = "tl.disable_prelower_semantic_check"
    TL_DISABLE_WARP_SPECIALIZED = "tl.disable_warp_specialized"
    TL_PTXAS_REGISTER_USAGE_LEVEL = "tl.ptxas_register_usage_level"
    TL_DEVICE_COMPILE_FLAGS = "tl.device_compile_flags"
    TL_EMIT_LINE_DIRECTIVES = "tl.emit_line_directives"
    TL_CONFIG_INDEX_BITWIDTH = "tl.config_index_bitwidth"
    TL_ENABLE_REDUCER_PLAN_VERBOSE = "tl.enable_reducer_plan_verbose"
    TL_LAYOUT_COST_MODEL = "tl.layout_cost_model"
    TL_REDUCER_FORCE_BASELINE = "tl.reducer_force_baseline"
    TL_DISABLE_TMA_LOWER = "tl.disable_tma_lower"
    TL_DISABLE_SAFE_MEMORY_ACCESS = "tl.disable_safe_memory_legalize"
    TL_DISABLE_VECTORIZE_256 = "tl.disable_vectorize_256"
    TL_ENABLE_ASYNC_COPY = "tl.enable_async_copy"
    TL_ENABLE_LOWER_LDGSTG = "tl.enable_lower_ldgstg"
    TL_ENABLE_LOWER_LDGSTG_PREDICATED = "tl.enable_lower_ldgstg_predicated"
    TL_ENABLE_VECTORIZE_PLANNER_VERBOSE = "tl.enable_vectorize_planner_verbose"
    TL_DISABLE_WGMMA = "tl.disable_wgmma"
    TL_DEBUG_MERGE_SHARED_MEMORY_ALLOCATIONS = "tl.debug_merge_shared_memory_allocations"
    TL_ENABLE_AGGRESSIVE_SHARED_MEMORY_MERGE = "tl.enable_aggressive_shared_memory_merge"
    TL_DISABLE_SHUFFLE_ELECT = "tl.disable_shuffle_elect"
    TL_DISABLE_LOOP_UNSWITCHING = "tl.disable_loop_unswitching"
    TL_LOOP_UNSWITCHING_ALLOW_NON_TRIVIAL_ELSE = "tl.loop_unswitching_allow_non_trivial_else"
    TL_IF_STMT_BINDING_INLINE_REPLAYABLE_BINDS = "tl.if_stmt_binding_inline_replayable_binds"
    TL_DISABLE_THREAD_STORAGE_SYNC = "tl.disable_thread_storage_sync"
    TL_FORCE_LET_INLINE = "tl.force_let_inline"
    TL_AST_PRINT_ENABLE = "tl.ast_print_enable"
    TL_LAYOUT_VISUALIZATION_ENABLE = "tl.layout_visualization_enable"
    TL_LAYOUT_VISUALIZATION_FORMATS = "tl.layout_visualization_formats"
    TL_STORAGE_REWRITE_DETECT_INPLACE = "tl.storage_rewrite_detect_inplace"
    TL_DISABLE_OUT_OF_BOUND_WARNING = "tl.disable_out_of_bound_warning"
    TL_ENABLE_DUMP_IR = "tl.enable_dump_ir"
    TL_DUMP_IR_DIR = "tl.dump_ir_path"
    TL_PASS_PROFILE = "tl.pass_profile"
    TL_PASS_PROFILE_THRESHOLD_MS = "tl.pass_profile_threshold_ms"
    TIR_ENABLE_EQUIV_TERMS_IN_CSE = "tir.enable_equiv_terms_in_cse_tir"
    TIR_DISABLE_CSE = "tirx.disable_cse_tir"
    TIR_SIMPLIFY = "tirx.Simplify"
    TIR_DISABLE_STORAGE_REWRITE = "tirx.disable_storage_rewrite"
    TIR_DISABLE_VECTORIZE = "tirx.disable_vectorize"
    TIR_USE_ASYNC_COPY = "tirx.use_async_copy"
    TIR_ENABLE_DEBUG = "tirx.enable_debug"
    TIR_MERGE_STATIC_SMEM = "tirx.merge_static_smem"
    TIR_ADD_LOWER_PASS = "tirx.add_lower_pass"
    TIR_NOALIAS = "tirx.noalias"
    CUDA_KERNELS_OUTPUT_DIR = "cuda.kernels_output_dir"


# key -> (option, value as a function of the config's value)
EFFECTS = {
    PassConfigKey.TL_ENABLE_FAST_MATH.value: ("fast_math", bool),
    PassConfigKey.TL_DISABLE_SHARED_MEMORY_REUSE.value: ("memory_reuse", lambda v: not v),
}
# older TileLang releases spelled some keys with the `tir.` prefix
_OLD_PREFIX = {"tir.": "tirx."}


def normalize(key) -> str | None:
    """The key's string if TileLang knows it, else None."""
    text = key.value if isinstance(key, PassConfigKey) else str(key)
    known = {k.value for k in PassConfigKey}
    if text in known:
        return text
    for old, new in _OLD_PREFIX.items():
        if text.startswith(old) and new + text[len(old):] in known:
            return new + text[len(old):]
    return None


def options_for(pass_configs) -> dict:
    """The compile options `pass_configs` sets; raises TileLangError (TL0781) for a key
    TileLang does not know."""
    from .diagnostics import Diagnostic, TileLangError
    from .diagnostics.codes_compat import PASS_CONFIG
    out = {}
    if not pass_configs:
        return out
    if not isinstance(pass_configs, dict):
        raise TileLangError(Diagnostic(PASS_CONFIG, "pass_configs must be a dict of "
                                       f"PassConfigKey -> value, not {type(pass_configs).__name__}"))
    for key, value in pass_configs.items():
        text = normalize(key)
        if text is None:
            import difflib
            close = difflib.get_close_matches(str(getattr(key, "value", key)),
                                              [k.value for k in PassConfigKey], n=1)
            raise TileLangError(Diagnostic(
                PASS_CONFIG, f"unknown pass_configs key {str(getattr(key, 'value', key))!r}",
                help=f"did you mean {close[0]!r}?" if close else
                "see tilelang.PassConfigKey for the keys"))
        if text in EFFECTS:
            option, convert = EFFECTS[text]
            out[option] = convert(value)
    return out


__all__ = ["PassConfigKey", "EFFECTS", "normalize", "options_for"]
