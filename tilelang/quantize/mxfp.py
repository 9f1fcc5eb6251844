"""The fp4 (e2m1) -> bfloat16 decoder of TileLang's `get_mxfp_intrin_group`, in C.

The *twiddled* layout packs eight fp4 values in four bytes so that a few shifts and one
mask place each value's sign, exponent and mantissa bits at their bfloat16 positions: the
bytes are read as one big-endian 32-bit word; each 16-bit half then holds four values,
the k-th (k = 0, 1, 2) at `(half << 3k) & 0x81C0` (sign bit 15, exponent bits 7-8,
mantissa bit 6) and the fourth gathered from the remaining bits. The placed bits are a
bfloat16 with the exponent bias of fp4; multiplying by 2^126 rebiases it (exactly).
Outputs: the upper half's four values, then the lower half's, per word.
"""
from __future__ import annotations

_TWIDDLING_C = r"""
#include <stdint.h>
#include <string.h>

/* bf16 bits (in the low 16 bits) times 2^126; exact for the placed fp4 fields */
static uint16_t tl_rebias_bf16(uint32_t bits) {
    float x;
    uint32_t u = bits << 16;
    memcpy(&x, &u, sizeof x);
    x *= 0x1p126f;
    memcpy(&u, &x, sizeof u);
    return (uint16_t)(u >> 16);
}

/* N groups of 4 bytes of twiddled fp4 -> 8 bfloat16 (bit patterns) each */
void decode_fp4_to_bf16_twiddling(const uint8_t *B_local, uint16_t *B_local_decode, int N) {
    for (int i = 0; i < N; ++i) {
        const uint8_t *b = B_local + 4 * i;
        uint32_t w = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
        uint32_t lanes[4] = {
            w & 0x81C081C0u,
            (w << 3) & 0x81C081C0u,
            (w << 6) & 0x81C081C0u,
            ((w << 1) & 0x80008000u) | ((w >> 3) & 0x01800180u) | ((w >> 7) & 0x00400040u),
        };
        for (int j = 0; j < 4; ++j) {
            B_local_decode[8 * i + j] = tl_rebias_bf16(lanes[j] >> 16);
            B_local_decode[8 * i + j + 4] = tl_rebias_bf16(lanes[j] & 0xFFFFu);
        }
    }
}
"""

_SOURCES = {"fp4_to_bf16_twiddling": _TWIDDLING_C}


def get_mxfp_intrin_group(out_dtype="bfloat16", source_format="uint", source_bit=4,
                          storage_dtype="uint8", use_twiddling=False, target=None) -> dict:
    """{"func_name", "c_source"} of the fp4 -> `out_dtype` decoder (TileLang's keywords;
    `target` is not used). Only the twiddled fp4 -> bfloat16 decoder exists."""
    from ..dtypes import canonical
    out, fmt, storage = (canonical(str(x)) for x in (out_dtype, source_format,
                                                      storage_dtype))
    if out not in ("float16", "bfloat16"):
        raise ValueError(f"out_dtype {out_dtype!r}: float16 or bfloat16 expected")
    if fmt not in ("int32", "uint32"):
        raise ValueError(f"source_format {source_format!r}: int or uint expected")
    if storage not in ("int32", "int8", "uint8"):
        raise ValueError(f"storage_dtype {storage_dtype!r}: int32, int8 or uint8 expected")
    key = f"fp{source_bit}_to_{'bf16' if out == 'bfloat16' else 'f16'}"
    if use_twiddling:
        key += "_twiddling"
    if key not in _SOURCES:
        raise ValueError(f"no {key} decoder; available: {', '.join(_SOURCES)}")
    return {"func_name": "decode_" + key, "c_source": _SOURCES[key]}
