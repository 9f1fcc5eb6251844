"""Multi-rank statements -> LLVM IR: peer block copies, signals, waits, barriers, atomics
that return the previous value, and the rank queries (T.get_rank, T.get_num_ranks).

Every multi-rank kernel receives the rank table (tilelang/runtime/ranks/table.py) as one
more launch argument. A peer's copy of a symmetric buffer is reached by moving the local
address by (peer heap base - own heap base). Peer ranks and element ranges are checked
at run time; a failure (and a wait that times out or sees the run aborted) records what
happened in the table's ERR_* words and returns from the kernel, and the runtime raises
it as an exception naming the rank, the operation's source position and the values.
"""
from __future__ import annotations

from llvmlite import ir

from ... import dtypes
from ...ir.nodes import (AtomicFetch, Barrier, Const, PeerCopy, RANK_STMTS, SignalOp, Wait,
                         WAIT_CMPS, first_rank_use, is_peer_view)
from ...ir.visitor import walk
from ...runtime.ranks import table as T
from . import convert, streaming
from .context import entry_alloca
from .types import I1, I32, I64, PTR, VOID, storage_type

_WAIT_FN = "tilelang.wait"
READ_AHEAD = 4096          # bytes prefetched after a T.get_block
_SLOW_EVERY = 255          # spins between clock / abort checks
_YIELD_AFTER = 4096        # spins before a wait starts sleeping between checks
_SLEEP_US = 50


def uses_ranks(func) -> bool:
    """A rank primitive or query (an atomic that returns the previous value is a plain
    atomic of one device)."""
    return first_rank_use(func.body) is not None


def rank_sites(func) -> list:
    """The statements that may fail at run time, in a fixed order: the manifest lists
    them and the table's ERR_SITE indexes them."""
    return [n for n in walk(func.body) if isinstance(n, RANK_STMTS) or is_peer_view(n)]


def symmetric_buffers(func) -> list:
    """Names of the tensors a kernel reaches on peers (they must be in a symmetric heap)."""
    names = []
    for n in walk(func.body):
        if isinstance(n, PeerCopy):
            b = n.remote
        elif is_peer_view(n):
            b = n.source
        elif isinstance(n, (SignalOp, Barrier)) or (isinstance(n, Wait) and not _local(n.pe)):
            b = n.buffer
        else:
            continue
        if b.name not in names:
            names.append(b.name)
    return names


def _local(pe) -> bool:
    return isinstance(pe, Const) and pe.value == -1


class RankEmitter:
    """Mixed into StmtEmitter. Needs ctx.rank_table (the table pointer) and
    ctx.rank_sites (id(node) -> site index) for kernels that use ranks."""

    # ------------------------------------------------------------------ table access

    def _word(self, k, typ=I64):
        """table[k] (k an int or an i64 value)."""
        b = self.b
        idx = ir.Constant(I64, k) if isinstance(k, int) else k
        ptr = b.gep(self.ctx.rank_table, [idx], inbounds=True, source_etype=I64)
        return b.load(ptr, typ=I64, align=8)

    def rank_query(self, name: str) -> ir.Value:
        return self.b.trunc(self._word(T.RANK if name == "get_rank" else T.NUM_RANKS), I32)

    def _fail_if(self, cond, code: int, node, pe=None, observed=None, expected=None,
                 index=None) -> None:
        """When `cond` (i1) holds: record the error (first one wins) and return."""
        b, ctx = self.b, self.ctx
        fail_bb, ok_bb = ctx.new_block("rank.fail"), ctx.new_block("rank.ok")
        br = b.cbranch(cond, fail_bb, ok_bb)
        br.set_weights([1, 1000])
        b.position_at_end(fail_bb)
        err = b.gep(ctx.rank_table, [ir.Constant(I64, T.ERR_CODE)], inbounds=True,
                    source_etype=I64)
        code_v = ir.Constant(I64, code) if isinstance(code, int) else b.zext(code, I64)
        pair = b.cmpxchg(err, ir.Constant(I64, 0), code_v, "seq_cst", "seq_cst")
        won_bb, out_bb = ctx.new_block("rank.record"), ctx.new_block("rank.return")
        b.cbranch(b.extract_value(pair, 1), won_bb, out_bb)
        b.position_at_end(won_bb)
        site = ctx.rank_sites.get(id(node), -1)
        for k, v in ((T.ERR_SITE, ir.Constant(I64, site)), (T.ERR_PE, pe),
                     (T.ERR_OBSERVED, observed), (T.ERR_EXPECTED, expected),
                     (T.ERR_INDEX, index)):
            if v is not None:
                ptr = b.gep(ctx.rank_table, [ir.Constant(I64, k)], inbounds=True,
                            source_etype=I64)
                b.store(_i64(b, v), ptr, align=8)
        b.branch(out_bb)
        b.position_at_end(out_bb)
        b.ret_void()
        b.position_at_end(ok_bb)

    # ------------------------------------------------------------------ addresses

    def _linear(self, buf, indices):
        """(pointer to buf[indices], linear i64 index, element count)."""
        slot = self.ctx.buffers[buf.name]
        linear, count = ir.Constant(I64, 0), ir.Constant(I64, 1)
        b = self.b
        for dim, idx in zip(slot.dims, indices):
            linear = b.add(b.mul(linear, dim), self.index64(idx))
            count = b.mul(count, dim)
        ptr = b.gep(slot.base, [linear], inbounds=False, source_etype=storage_type(buf.dtype))
        return ptr, linear, count

    def _check_range(self, node, start, size, count) -> None:
        b = self.b
        bad = b.or_(b.icmp_signed("<", start, ir.Constant(I64, 0)),
                    b.or_(b.icmp_signed("<", size, ir.Constant(I64, 0)),
                          b.icmp_signed(">", b.add(start, size), count)))
        self._fail_if(bad, T.ERR_BOUNDS, node, index=b.add(start, size), expected=count)

    def _peer(self, node, ptr, pe_expr):
        """`ptr` moved into rank `pe`'s heap (pe -1: this rank); checks the rank."""
        b = self.b
        if isinstance(pe_expr, ir.Value):
            pe = pe_expr
        elif _local(pe_expr):
            return ptr, None
        else:
            pe = b.sext(self.expr_as(pe_expr, "int32"), I64)
        rank = self._word(T.RANK)
        pe = b.select(b.icmp_signed("==", pe, ir.Constant(I64, -1)), rank, pe)
        n = self._word(T.NUM_RANKS)
        bad = b.or_(b.icmp_signed("<", pe, ir.Constant(I64, 0)), b.icmp_signed(">=", pe, n))
        self._fail_if(bad, T.ERR_BAD_PEER, node, pe=pe)
        base = self._word(b.add(pe, ir.Constant(I64, T.BASES)))
        self._fail_if(b.icmp_signed("==", base, ir.Constant(I64, 0)), T.ERR_BAD_PEER, node,
                      pe=pe)
        delta = b.sub(base, self._word(b.add(rank, ir.Constant(I64, T.BASES))))
        return b.gep(ptr, [delta], inbounds=False, source_etype=ir.IntType(8)), pe

    # ------------------------------------------------------------------ statements

    def _s_PeerCopy(self, s: PeerCopy) -> None:
        b = self.b
        size = self.index64(s.size)
        src, src_at, src_n = self._linear(s.src, s.src_indices)
        dst, dst_at, dst_n = self._linear(s.dst, s.dst_indices)
        self._check_range(s, src_at, size, src_n)
        self._check_range(s, dst_at, size, dst_n)
        if s.kind == "put":
            dst, _ = self._peer(s, dst, s.pe)
        else:
            src, _ = self._peer(s, src, s.pe)
        nbytes = b.mul(size, ir.Constant(I64, dtypes.nbytes(s.src.dtype)))
        memcpy = convert.intrinsic(self.ctx.module, "llvm.memcpy.p0.p0.i64", VOID,
                                   [PTR, PTR, I64, I1])
        b.call(memcpy, [dst, src, nbytes, ir.Constant(I1, 0)])
        if s.kind == "get":
            self._read_ahead(src, nbytes)

    def _read_ahead(self, src, nbytes) -> None:
        """Prefetch what follows a block read from a heap (up to READ_AHEAD bytes): rows
        are read chunk after chunk, and the hardware prefetcher stops at every 4 KiB
        page of shared memory (no transparent huge pages there)."""
        b = self.b
        span = b.select(b.icmp_signed("<", nbytes, ir.Constant(I64, READ_AHEAD)), nbytes,
                        ir.Constant(I64, READ_AHEAD))
        count = b.udiv(span, ir.Constant(I64, 64))
        fn = convert.intrinsic(self.ctx.module, "llvm.prefetch.p0", VOID,
                               [PTR, I32, I32, I32])
        end = b.gep(src, [nbytes], inbounds=False, source_etype=ir.IntType(8))

        def line(i):
            at = b.gep(end, [b.mul(i, ir.Constant(I64, 64))], inbounds=False,
                       source_etype=ir.IntType(8))
            b.call(fn, [at, ir.Constant(I32, 0), ir.Constant(I32, 2), ir.Constant(I32, 1)])

        self.counted_loop(I64, ir.Constant(I64, 0), count, line, name="read_ahead")

    def _element(self, s):
        ptr, at, n = self._linear(s.buffer, s.indices)
        self._check_range(s, at, ir.Constant(I64, 1), n)
        return ptr, at

    def _publish(self) -> None:
        """Before a signal, a barrier arrival or an atomic: the streaming stores so far
        are visible first (they are weakly ordered)."""
        if self.ctx.streams:
            streaming.fence(self)

    def _s_SignalOp(self, s: SignalOp) -> None:
        ptr, _ = self._element(s)
        ptr, _ = self._peer(s, ptr, s.pe)
        value = self.expr_as(s.value, s.buffer.dtype)
        self._publish()
        # a release store, as an exchange (llvmlite's store_atomic needs typed pointers)
        self.b.atomic_rmw("xchg" if s.op == "set" else "add", ptr, value, "seq_cst")

    def _s_Wait(self, s: Wait) -> None:
        ptr, at = self._element(s)
        ptr, pe = self._peer(s, ptr, s.pe)
        expected = self.expr_as(s.expected, s.buffer.dtype)
        self._wait(s, ptr, s.buffer.dtype, WAIT_CMPS.index(s.cmp), expected, pe, at)

    def _wait(self, node, ptr, dtype, cmp: int, expected, pe, index) -> None:
        b = self.b
        observed = entry_alloca(self.ctx, I64, "wait.observed", 8)
        exp64 = _i64(b, expected)
        code = b.call(_wait_fn(self.ctx.module),
                      [ptr, ir.Constant(I32, int(dtype == "int64")), ir.Constant(I32, cmp),
                       exp64, self.ctx.rank_table, observed])
        self._fail_if(b.icmp_signed("!=", code, ir.Constant(I32, 0)), code, node,
                      pe=pe if pe is not None else self._word(T.RANK),
                      observed=b.load(observed, typ=I64, align=8), expected=exp64,
                      index=index)

    def _s_Barrier(self, s: Barrier) -> None:
        """Arrive (add 1 to my word on every rank of the host: my own word counts my
        arrivals, so its old value + 1 is this barrier's epoch), then wait for every such
        rank's word to reach the epoch on my heap. Ranks on other hosts (not mapped)
        take no part: across hosts, the host runtime synchronises through MPI."""
        b = self.b
        n = self._word(T.NUM_RANKS)
        rank = self._word(T.RANK)
        slot = self.ctx.buffers[s.buffer.name]
        self._fail_if(b.icmp_signed("<", slot.dims[0], n), T.ERR_BOUNDS, s, index=n,
                      expected=slot.dims[0])
        mine = b.gep(slot.base, [rank], inbounds=True, source_etype=I32)
        self._publish()
        epoch = b.add(b.atomic_rmw("add", mine, ir.Constant(I32, 1), "seq_cst"),
                      ir.Constant(I32, 1))

        def mapped(p):      # the ranks whose heaps this process maps: its host's
            return b.icmp_signed("!=", self._word(b.add(p, ir.Constant(I64, T.BASES))),
                                 ir.Constant(I64, 0))

        def arrive(p):
            skip_bb, go_bb = self.ctx.new_block("bar.skip"), self.ctx.new_block("bar.arrive")
            b.cbranch(b.and_(b.icmp_signed("!=", p, rank), mapped(p)), go_bb, skip_bb)
            b.position_at_end(go_bb)
            peer_ptr, _ = self._peer(s, mine, p)
            b.atomic_rmw("add", peer_ptr, ir.Constant(I32, 1), "seq_cst")
            b.branch(skip_bb)
            b.position_at_end(skip_bb)

        self.counted_loop(I64, ir.Constant(I64, 0), n, arrive, name="bar.arrive")

        def await_rank(p):
            with b.if_then(mapped(p)):
                word = b.gep(slot.base, [p], inbounds=True, source_etype=I32)
                self._wait(s, word, "int32", WAIT_CMPS.index("ge"), epoch, p, p)

        self.counted_loop(I64, ir.Constant(I64, 0), n, await_rank, name="bar.wait")

    def _s_AtomicFetch(self, s: AtomicFetch) -> None:
        ptr, _ = self.address(s.buffer, s.indices)
        value = self.expr_as(s.value, s.buffer.dtype)
        self._publish()
        self.ctx.env[s.var] = self.atomic_update(s.op, ptr, value, s.buffer.dtype, "seq_cst")


def _i64(b, v):
    if v.type == I64:
        return v
    return b.sext(v, I64)


def _wait_fn(module: ir.Module) -> ir.Function:
    """`i32 tilelang.wait(ptr addr, i32 is64, i32 cmp, i64 expected, ptr table,
    ptr observed)`: spin until *addr (atomic acquire loads) compares `cmp` (WAIT_CMPS
    order) to `expected`; every few hundred spins check the clock and the run's abort
    word, yield after a while, sleep after longer. Returns ERR_NONE, ERR_TIMEOUT or
    ERR_ABORTED and leaves the last value seen in *observed."""
    fn = module.globals.get(_WAIT_FN)
    if fn is not None:
        return fn
    fn = ir.Function(module, ir.FunctionType(I32, [PTR, I32, I32, I64, PTR, PTR]),
                     name=_WAIT_FN)
    fn.linkage = "internal"
    addr, is64, cmp, expected, table, observed = fn.args
    entry, loop = fn.append_basic_block("entry"), fn.append_basic_block("loop")
    done, slow = fn.append_basic_block("done"), fn.append_basic_block("slow")
    check, sleep = fn.append_basic_block("check"), fn.append_basic_block("sleep")
    timeout_bb, abort_bb = fn.append_basic_block("timeout"), fn.append_basic_block("abort")
    next_bb = fn.append_basic_block("next")
    b = ir.IRBuilder(entry)
    ts = b.alloca(ir.ArrayType(I64, 2), name="ts")
    b.branch(loop)

    b.position_at_end(loop)
    spins = b.phi(I64, name="spins")
    start = b.phi(I64, name="start")
    spins.add_incoming(ir.Constant(I64, 0), entry)
    start.add_incoming(ir.Constant(I64, -1), entry)
    wide, narrow = fn.append_basic_block("wide"), fn.append_basic_block("narrow")
    compare = fn.append_basic_block("compare")
    b.cbranch(b.icmp_unsigned("!=", is64, ir.Constant(I32, 0)), wide, narrow)
    b.position_at_end(wide)
    v64 = b.load_atomic(addr, "acquire", 8, typ=I64)
    b.branch(compare)
    b.position_at_end(narrow)
    v32 = b.sext(b.load_atomic(addr, "acquire", 4, typ=I32), I64)
    b.branch(compare)
    b.position_at_end(compare)
    value = b.phi(I64)
    value.add_incoming(v64, wide)
    value.add_incoming(v32, narrow)
    b.store(value, observed, align=8)
    tests = [b.icmp_signed(op, value, expected) for op in ("==", "!=", ">=", "<=", ">", "<")]
    ok = tests[-1]
    for i in range(len(tests) - 2, -1, -1):
        ok = b.select(b.icmp_unsigned("==", cmp, ir.Constant(I32, i)), tests[i], ok)
    b.cbranch(ok, done, slow)

    b.position_at_end(done)
    b.ret(ir.Constant(I32, T.ERR_NONE))

    b.position_at_end(slow)
    n = b.add(spins, ir.Constant(I64, 1))
    is_check = b.icmp_unsigned("==", b.and_(n, ir.Constant(I64, _SLOW_EVERY)),
                               ir.Constant(I64, 0))
    b.cbranch(is_check, check, next_bb)

    b.position_at_end(check)
    clock = convert.intrinsic(module, "clock_gettime", I32, [I32, PTR])
    b.call(clock, [ir.Constant(I32, 1), ts])      # CLOCK_MONOTONIC
    sec = b.load(b.gep(ts, [ir.Constant(I64, 0), ir.Constant(I32, 0)], inbounds=True),
                 typ=I64)
    nsec = b.load(b.gep(ts, [ir.Constant(I64, 0), ir.Constant(I32, 1)], inbounds=True),
                  typ=I64)
    now = b.add(b.mul(sec, ir.Constant(I64, 1_000_000_000)), nsec)
    first = b.icmp_signed("<", start, ir.Constant(I64, 0))
    began = b.select(first, now, start)
    limit = b.load(b.gep(table, [ir.Constant(I64, T.TIMEOUT_NS)], inbounds=True,
                         source_etype=I64), typ=I64, align=8)
    late = b.icmp_signed(">", b.sub(now, began), limit)
    abort_ptr = b.load(b.gep(table, [ir.Constant(I64, T.ABORT_PTR)], inbounds=True,
                             source_etype=I64), typ=I64, align=8)
    has_abort = b.icmp_unsigned("!=", abort_ptr, ir.Constant(I64, 0))
    abort_word = b.inttoptr(b.select(has_abort, abort_ptr,
                                     b.ptrtoint(observed, I64)), PTR)
    aborted = b.and_(has_abort, b.icmp_unsigned(
        "!=", b.load_atomic(abort_word, "monotonic", 8, typ=I64), ir.Constant(I64, 0)))
    after_late = fn.append_basic_block("not_late")
    b.cbranch(late, timeout_bb, after_late)
    b.position_at_end(after_late)
    b.cbranch(aborted, abort_bb, sleep)

    b.position_at_end(timeout_bb)
    b.ret(ir.Constant(I32, T.ERR_TIMEOUT))
    b.position_at_end(abort_bb)
    b.ret(ir.Constant(I32, T.ERR_ABORTED))

    b.position_at_end(sleep)
    yield_fn = convert.intrinsic(module, "sched_yield", I32, [])
    usleep = convert.intrinsic(module, "usleep", I32, [I32])
    long_wait = b.icmp_unsigned(">", n, ir.Constant(I64, _YIELD_AFTER * 16))
    with b.if_else(long_wait) as (then, otherwise):
        with then:
            b.call(usleep, [ir.Constant(I32, _SLEEP_US)])
        with otherwise:
            with b.if_then(b.icmp_unsigned(">", n, ir.Constant(I64, _YIELD_AFTER))):
                b.call(yield_fn, [])
    b.branch(next_bb)
    sleep_end = b.block

    b.position_at_end(next_bb)
    start_next = b.phi(I64)
    start_next.add_incoming(start, slow)
    start_next.add_incoming(began, sleep_end)
    b.branch(loop)
    spins.add_incoming(n, next_bb)
    start.add_incoming(start_next, next_bb)
    return fn


__all__ = ["RankEmitter", "uses_ranks", "rank_sites", "symmetric_buffers"]
