// SPDX-License-Identifier: MIT
/*
 * gen_ulb_fuzz_corpus.cc - writes the seed corpora of the ULB fuzzers from
 * the independent encoder: gen_ulb_fuzz_corpus <call_dir> <reply_dir>.
 * Run by hand; the output is committed under tests/fuzz/corpus/.
 */
#include <cstdio>
#include <string>

#include "support/nfs_xdr_builder.h"

using namespace nfsxdr;

static void put32(Bytes &b, uint32_t v)
{
	for (int i = 3; i >= 0; i--)
		b.push_back(uint8_t(v >> (8 * i)));
}

static void write_file(const std::string &dir, const std::string &name, const Bytes &b)
{
	std::string path = dir + "/" + name;
	FILE *f = fopen(path.c_str(), "wb");
	if (!f) {
		perror(path.c_str());
		return;
	}
	fwrite(b.data(), 1, b.size(), f);
	fclose(f);
}

/* call scan: [nread][cutseed] nread x (pos, len) stream */
static void call_seed(const std::string &dir, const std::string &name, const Bytes &stream,
		      const std::vector<Item> &chunks, uint8_t seed)
{
	Bytes b;
	b.push_back(uint8_t(chunks.size()));
	b.push_back(seed);
	for (auto &it : chunks) {
		put32(b, uint32_t(it.position));
		put32(b, it.length);
	}
	b.insert(b.end(), stream.begin(), stream.end());
	write_file(dir, name, b);
}

/* reply walk header, see fuzz_ulb_input.h */
static void reply_seed(const std::string &dir, const std::string &name, const Bytes &stream,
		       uint8_t which, uint8_t proc, uint8_t minor, std::vector<uint32_t> writes,
		       bool has_reply, uint32_t reply_len, uint16_t inline_send, uint8_t seed)
{
	Bytes b = {which,
		   proc,
		   minor,
		   0,
		   uint8_t(writes.size()),
		   uint8_t(has_reply),
		   seed,
		   uint8_t(inline_send >> 8),
		   uint8_t(inline_send)};
	put32(b, reply_len);
	for (uint32_t w : writes)
		put32(b, w);
	b.insert(b.end(), stream.begin(), stream.end());
	write_file(dir, name, b);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s call_dir reply_dir\n", argv[0]);
		return 2;
	}
	std::string cd = argv[1], rd = argv[2];
	Sessionid sid = {{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}};

	/* Calls */
	for (int v = 0; v < 4; v++) {
		Compound cp(0x10 + v, 2, 73);
		for (uint32_t op = 3; op <= 75; op++)
			cp.op_sample(op, v);
		call_seed(cd, "v42-every-op-" + std::to_string(v), cp.x.buf, {}, uint8_t(v * 7));
	}
	{
		Compound cp(0x20, 1, 4);
		cp.op_sequence(sid, 5, 1);
		cp.op_putfh(pattern(16));
		cp.op_write(0, pattern(300), true);
		cp.op_create_symlink("s", pattern(40), true);
		call_seed(cd, "v41-write-symlink-chunks", cp.x.buf, cp.items, 3);
	}
	{
		Compound cp(0x21, 0, 9);
		cp.op_putfh(pattern(20));
		cp.op_lookup("a");
		cp.op_read(0, 4096);
		cp.op_putfh(pattern(20));
		cp.op_lookup("b");
		cp.op_readlink();
		cp.op_putfh(pattern(20));
		cp.op_lookup("c");
		cp.op_read(0, 4096);
		call_seed(cd, "v40-rfc8267-example", cp.x.buf, {}, 0);
	}
	Legacy w3 = v3_write_call(0x30, pattern(1000), true);
	call_seed(cd, "v3-write-chunk", w3.x.buf, w3.items, 5);
	Legacy s3 = v3_symlink_call(0x31, "n", "/p/q", false);
	call_seed(cd, "v3-symlink", s3.x.buf, {}, 1);
	call_seed(cd, "v3-read", v3_read_call(0x32, 0, 100).x.buf, {}, 2);
	Legacy w2 = v2_write_call(0x33, pattern(100), false);
	call_seed(cd, "v2-write", w2.x.buf, {}, 0);
	Legacy s2 = v2_symlink_call(0x34, "n", "/p", true);
	call_seed(cd, "v2-symlink-chunk", s2.x.buf, s2.items, 9);
	call_seed(cd, "mount", simple_call(0x35, 100005, 3, 1, 20).x.buf, {}, 0);
	call_seed(cd, "cb-compound", cb_compound_call(0x36, sid, 1, 0), {}, 4);

	/* Replies */
	{
		CompoundRes r(0x21, 0, 9);
		r.res_putfh();
		r.res_lookup();
		r.res_read(pattern(1000), false);
		r.res_putfh();
		r.res_lookup();
		r.res_readlink(pattern(13));
		r.res_putfh();
		r.res_lookup();
		r.res_read(pattern(999), true);
		reply_seed(rd, "v4-rfc8267-abc", r.x.buf, 0, 1, 0, {4096, 4096, 4096}, false, 0,
			   4096, 0);
		reply_seed(rd, "v4-rfc8267-b-empty", r.x.buf, 0, 1, 0, {4096, 0, 4096}, false, 0,
			   4096, 7);
		reply_seed(rd, "v4-rfc8267-small", r.x.buf, 0, 1, 0, {512}, true, 100, 1024, 3);
	}
	for (int v = 0; v < 4; v++) {
		std::vector<uint32_t> ops;
		for (uint32_t op = 3; op <= 75; op++)
			if (op != READ && op != READLINK && op != READ_PLUS)
				ops.push_back(op);
		CompoundRes r(0x40, 0, uint32_t(ops.size()) + 1, v % 2 ? AUTH_SYS : AUTH_NONE);
		for (uint32_t op : ops)
			r.res_sample(op, v);
		r.res_read_plus(true, {{true, 0, pattern(100), 0}, {false, 100, {}, 50}});
		reply_seed(rd, "v42-every-res-" + std::to_string(v), r.x.buf, 0, 1, 2, {8192},
			   false, 0, 65535, uint8_t(v));
	}
	reply_seed(rd, "v3-read", v3_read_reply(0x50, 0, pattern(3000)).x.buf, 1, 6, 0, {4096},
		   false, 0, 1024, 0);
	reply_seed(rd, "v3-readlink", v3_readlink_reply(0x51, 0, "/x/y").x.buf, 1, 5, 0, {64},
		   false, 0, 1024, 2);
	reply_seed(rd, "v2-read", v2_read_reply(0x52, 0, pattern(500)).x.buf, 2, 6, 0, {512}, false,
		   0, 1024, 1);
	return 0;
}
