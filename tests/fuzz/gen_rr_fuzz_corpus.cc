// SPDX-License-Identifier: MIT
/*
 * gen_rr_fuzz_corpus OUTDIR - writes the seed corpora of fuzz_rr_call and
 * fuzz_rr_reply (OUTDIR/rr_call, OUTDIR/rr_reply; committed under
 * tests/fuzz/corpus). The transport headers are built with the independent
 * encoder in tests/support/rr_wire.h, one seed per message shape; the input
 * layout around them is the one rr_fuzz_engine.c reads.
 */
#include <cstdio>
#include <string>
#include <vector>

#include "support/rr_wire.h"

using rrtest::ReadEntry;
using rrtest::Seg;
using rrtest::Wire;

namespace
{

constexpr uint32_t kMsg = 0, kNomsg = 1;

/* An RPC Call header (RFC 5531): xid, CALL, rpcvers 2, prog, vers, proc,
 * AUTH_NONE credential and verifier; then @args bytes of arguments. */
std::vector<uint8_t> rpc_call(uint32_t xid, size_t args)
{
	Wire w;

	w.u32(xid).u32(0).u32(2).u32(100003).u32(3).u32(7).u32(0).u32(0).u32(0).u32(0);
	for (size_t i = 0; i < args; i++)
		w.b.push_back(uint8_t(i * 13 + 1));
	return w.b;
}

struct Hdr {
	uint32_t xid = 0x11223300;
	uint32_t proc = kMsg;
	std::vector<ReadEntry> reads;
	std::vector<std::vector<Seg>> writes;
	std::vector<Seg> reply;
	bool has_reply = false;
};

std::vector<uint8_t> message(const Hdr &h, const std::vector<uint8_t> &body)
{
	Wire w;

	w.fixed(h.xid, 1, 32, h.proc).read_list(h.reads).write_list(h.writes);
	w.reply_chunk(h.has_reply ? &h.reply : nullptr);
	w.bytes(body);
	return w.b;
}

void put16(std::vector<uint8_t> &v, size_t n)
{
	v.push_back(uint8_t(n >> 8));
	v.push_back(uint8_t(n));
}

void write_seed(const std::string &dir, const std::string &name, const std::vector<uint8_t> &b)
{
	std::string path = dir + "/" + name;
	FILE *f = fopen(path.c_str(), "wb");

	if (!f || fwrite(b.data(), 1, b.size(), f) != b.size()) {
		perror(path.c_str());
		exit(1);
	}
	fclose(f);
}

/* fuzz_rr_call: [knobs][fault][nmsgs-1] then per message [len:2] bytes, then pool
 * (fault 0x20: Replies from another thread; 0x40: released without a Reply;
 * 0x80 | n: work request n fails) */
void call_seed(const std::string &dir, const std::string &name, uint8_t knobs,
	       const std::vector<std::vector<uint8_t>> &msgs, uint8_t fault = 0)
{
	std::vector<uint8_t> b{knobs, fault, uint8_t(msgs.size() - 1)};

	for (const auto &m : msgs) {
		put16(b, m.size());
		b.insert(b.end(), m.begin(), m.end());
	}
	for (int i = 0; i < 64; i++)
		b.push_back(uint8_t(i * 29 + 7));
	write_seed(dir, name, b);
}

struct Span {
	uint8_t chunk;
	uint16_t offset, length;
};

/* fuzz_rr_reply: [knobs][fault][len:2] message [reply_len:2][layout][nspans]
 * spans..., then pool */
void reply_seed(const std::string &dir, const std::string &name, uint8_t knobs,
		const std::vector<uint8_t> &msg, size_t reply_len, uint8_t layout,
		const std::vector<Span> &spans, bool undeliverable = false, uint8_t fault = 0)
{
	std::vector<uint8_t> b{knobs, fault};

	put16(b, msg.size());
	b.insert(b.end(), msg.begin(), msg.end());
	put16(b, reply_len);
	b.push_back(layout);
	b.push_back(uint8_t(spans.size() | (undeliverable ? 0x80 : 0)));
	for (const auto &s : spans) {
		b.push_back(s.chunk);
		put16(b, s.offset);
		put16(b, s.length);
	}
	for (int i = 0; i < 64; i++)
		b.push_back(uint8_t(i * 31 + 3));
	write_seed(dir, name, b);
}

Seg seg(uint32_t handle, uint32_t len, uint64_t off)
{
	return Seg{handle, len, off};
}

} // namespace

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
		return 2;
	}
	const std::string call_dir = std::string(argv[1]) + "/rr_call";
	const std::string reply_dir = std::string(argv[1]) + "/rr_reply";
	Hdr h;

	/* ---- Calls ---- */
	call_seed(call_dir, "inline", 0x1b, {message(h, rpc_call(h.xid, 24))});
	{
		/* Long Call: the whole RPC message in a Position-Zero Read chunk */
		Hdr l;
		l.proc = kNomsg;
		l.reads = {{0, seg(0x1000, 96, 0x10000)}};
		call_seed(call_dir, "pzrc-nomsg", 0x1b, {message(l, {})});
		/* ... in two segments, plus a data chunk at XDR position 48 */
		l.reads = {{0, seg(0x1000, 64, 0x10000)}, {0, seg(0x1001, 60, 0x0)},
			   {48, seg(0x1002, 9, 0x400)}};
		call_seed(call_dir, "pzrc-nomsg-plus-chunk", 0x0a, {message(l, {})});
	}
	{
		/* an NFS WRITE-like Call: 13 data bytes at position 48, XDR pad 3 */
		Hdr r;
		r.reads = {{48, seg(0x2000, 13, 0x7000)}};
		call_seed(call_dir, "read-mid-pad", 0x03, {message(r, rpc_call(r.xid, 16))});
		/* the chunk length rounded up by the client: no pad to add */
		r.reads = {{48, seg(0x2000, 16, 0x7000)}};
		call_seed(call_dir, "read-mid-roundup", 0x03, {message(r, rpc_call(r.xid, 16))});
		/* a chunk at the very end of the inline stream */
		r.reads = {{56, seg(0x2000, 4096, 0x0)}};
		call_seed(call_dir, "read-at-end", 0x1f, {message(r, rpc_call(r.xid, 16))});
		/* a position past the inline stream: ERR_CHUNK */
		r.reads = {{400, seg(0x2000, 8, 0x0)}};
		call_seed(call_dir, "read-past-end", 0x00, {message(r, rpc_call(r.xid, 16))});
	}
	{
		/* several Read chunks, the first of two segments, out of order on the wire */
		Hdr r;
		r.reads = {{56, seg(0x3001, 7, 0x100)}, {44, seg(0x3000, 3, 0x0)},
			   {44, seg(0x3000, 2, 0x40)}, {64, seg(0x3002, 100, 0x9000)}};
		call_seed(call_dir, "several-reads", 0x00, {message(r, rpc_call(r.xid, 24))});
	}
	{
		Hdr w;
		w.writes = {{seg(0x4000, 4096, 0x100000)}};
		call_seed(call_dir, "write-list-1", 0x18, {message(w, rpc_call(w.xid, 32))});
		w.writes = {{seg(0x4000, 512, 0x100000), seg(0x4001, 512, 0)}, {seg(0x4002, 64, 8)}};
		call_seed(call_dir, "write-list-2", 0x18, {message(w, rpc_call(w.xid, 32))});
		Hdr rc;
		rc.has_reply = true;
		rc.reply = {seg(0x5000, 8192, 0x0)};
		call_seed(call_dir, "reply-chunk", 0x18, {message(rc, rpc_call(rc.xid, 32))});
	}
	{
		/* three Calls in flight: an inline one, a Read-chunk one, a Long Call */
		Hdr a, b, c;
		a.xid = 1;
		b.xid = 2;
		b.reads = {{44, seg(0x6000, 300, 0x0)}};
		c.xid = 3;
		c.proc = kNomsg;
		c.reads = {{0, seg(0x6001, 80, 0x0)}};
		call_seed(call_dir, "three-calls", 0x00,
			  {message(a, rpc_call(1, 8)), message(b, rpc_call(2, 8)), message(c, {})});
		/* one Read in flight at a time (ord 1), Replies after the poll loop */
		call_seed(call_dir, "three-calls-ord1-later", 0x20,
			  {message(b, rpc_call(2, 8)), message(c, {}), message(a, rpc_call(1, 8))});
		/* handed in by worker threads, built and posted as one batch */
		call_seed(call_dir, "three-calls-offthread", 0x3b,
			  {message(a, rpc_call(1, 8)), message(b, rpc_call(2, 8)), message(c, {})},
			  0x20);
		/* released without a Reply, from another thread */
		call_seed(call_dir, "three-calls-released", 0x03,
			  {message(a, rpc_call(1, 8)), message(b, rpc_call(2, 8)), message(c, {})},
			  0x60);
		/* the first RDMA Read fails, then the first Reply's Send (ord 1):
		 * the connection closes and must give everything back */
		call_seed(call_dir, "read-fails", 0x00,
			  {message(b, rpc_call(2, 8)), message(c, {})}, 0x80);
		call_seed(call_dir, "send-fails", 0x00,
			  {message(b, rpc_call(2, 8)), message(c, {})}, 0x81);
	}

	/* ---- Replies ---- */
	std::vector<uint8_t> call = rpc_call(h.xid, 24);
	reply_seed(reply_dir, "inline", 0x18, message(h, call), 120, 0, {});
	{
		Hdr w;
		w.writes = {{seg(0x4000, 4096, 0x100000)}};
		/* READ-like: 1001 payload bytes at offset 100, XDR pad skipped inline */
		reply_seed(reply_dir, "write-1", 0x18, message(w, call), 1200, 1,
			   {{0, 100, 1001}});
		/* the same from a registered region (zero-copy Writes) */
		reply_seed(reply_dir, "write-1-region", 0x18, message(w, call), 1200, 0x06,
			   {{0, 100, 1001}});
		/* a span whose offset + length wraps 64 bits (chunk byte bit 7:
		 * offset 2^64 - 3): the plan is invalid, ERR_CHUNK */
		reply_seed(reply_dir, "plan-offset-wraps", 0x18, message(w, call), 1200, 1,
			   {{0x80, 2, 1001}});
		/* payload shorter than the chunk of two segments + the Linux pad segment */
		w.writes = {{seg(0x4000, 600, 0x100000), seg(0x4001, 600, 0x0), seg(0x4002, 4, 0)}};
		reply_seed(reply_dir, "write-1-segs", 0x18, message(w, call), 1000, 0x0a,
			   {{0, 80, 900}});
		w.writes = {{seg(0x4000, 512, 0x100000)}, {seg(0x4001, 256, 0), seg(0x4002, 256, 0)}};
		reply_seed(reply_dir, "write-2", 0x18, message(w, call), 1100, 0x03,
			   {{0, 40, 500}, {1, 600, 400}});
		/* from another thread; then with its first RDMA Write failing */
		reply_seed(reply_dir, "write-2-offthread", 0x18, message(w, call), 1100, 0x03,
			   {{0, 40, 500}, {1, 600, 400}}, false, 0x20);
		reply_seed(reply_dir, "write-2-write-fails", 0x18, message(w, call), 1100, 0x03,
			   {{0, 40, 500}, {1, 600, 400}}, false, 0x80);
		/* a plan naming a chunk twice: ERR_CHUNK */
		reply_seed(reply_dir, "write-2-bad-plan", 0x18, message(w, call), 1100, 0,
			   {{0, 40, 100}, {0, 600, 100}});
		reply_seed(reply_dir, "undeliverable", 0x18, message(w, call), 300, 0, {}, true);
	}
	{
		Hdr rc;
		rc.has_reply = true;
		rc.reply = {seg(0x5000, 4096, 0x0), seg(0x5001, 4096, 0x8000)};
		/* a Long Reply: 6000 bytes past the 4096-byte inline threshold */
		reply_seed(reply_dir, "reply-chunk", 0x18, message(rc, call), 6000, 0x01, {});
		/* the client receives only 1024 bytes inline */
		reply_seed(reply_dir, "reply-chunk-1k", 0x98, message(rc, call), 2000, 0x02, {});
		/* too long even for the Reply chunk: ERR_CHUNK */
		reply_seed(reply_dir, "reply-chunk-short", 0x18, message(rc, call), 9000, 0, {});
		/* a short Reply with a Reply chunk offered: inline, chunk echoed empty */
		reply_seed(reply_dir, "reply-chunk-unused", 0x58, message(rc, call), 64, 0, {});
		/* Write list and Reply chunk together */
		Hdr wr = rc;
		wr.writes = {{seg(0x4000, 8192, 0x100000)}};
		reply_seed(reply_dir, "write-and-reply-chunk", 0x18, message(wr, call), 12000,
			   0x07, {{0, 2000, 5000}});
		/* a single rkey in the call: Send With Invalidate when offered */
		Hdr one;
		one.writes = {{seg(0x7000, 2048, 0x0), seg(0x7000, 2048, 0x1000)}};
		reply_seed(reply_dir, "send-with-inv", 0x58, message(one, call), 3000, 0x01,
			   {{0, 500, 2001}});
	}
	return 0;
}
