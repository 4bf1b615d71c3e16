// SPDX-License-Identifier: MIT
/*
 * ulb_cost - the ULB's per-call stages (ulb_call_scan, ulb_call_check_read_chunks,
 * ulb_reply_plan) on the Calls and Replies of NFSv3 and NFSv4.x READ and WRITE,
 * laid out as the plugin hands them over: the Call with its Read-chunk data in
 * place in its own iovec, the Reply with its payload by reference in its own
 * iovec and the encoder's word on where that is. Messages come from the independent encoder of tests/support. Meant to
 * run under callgrind (ulb_cost.sh): instructions per op inside ulb_cost_op().
 *
 *   ulb_cost CASE N    run CASE N times; CASE: v3-read v3-write v40-read
 *                      v41-read v41-write v42-read-plus
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "support/nfs_xdr_builder.h"
#include "ulb/ulb_call.h"
#include "ulb/ulb_reply.h"

using namespace nfsxdr;

namespace
{

struct Case {
	Bytes call, reply;
	std::vector<iovec> call_iov, reply_iov;
	struct rr_pcl pcl;
	uint64_t read_data; /* where the encoder put READ data by reference; 0: none */
};

/* Cut @b into [0, start) [start, start+len) [start+len, end): an item in its own iovec. */
std::vector<iovec> around(Bytes &b, uint64_t start, uint64_t len)
{
	std::vector<iovec> v;
	v.push_back({b.data(), size_t(start)});
	v.push_back({b.data() + start, size_t(len)});
	if (start + len < b.size())
		v.push_back({b.data() + start + len, size_t(b.size() - start - len)});
	return v;
}

void add_chunk(struct rr_chunk *c, uint32_t position, uint64_t len)
{
	c->position = position;
	c->first = 0;
	c->nsegs = 1;
	c->length = len;
}

Sessionid sid()
{
	Sessionid s;
	for (int i = 0; i < 16; i++)
		s.b[i] = uint8_t(0xa0 + i);
	return s;
}

bool build(const std::string &name, Case &k)
{
	const Bytes data = pattern(4096, 7);
	const Bytes fh = pattern(28, 3);

	memset(&k.pcl, 0, sizeof(k.pcl));
	k.read_data = 0;
	if (name == "v3-read" || name == "v3-write") {
		bool rd = name == "v3-read";
		Legacy c = rd ? v3_read_call(1, 0, 4096) : v3_write_call(1, data);
		Legacy r = rd ? v3_read_reply(1, 0, data) : Legacy();
		if (!rd) { /* WRITE3res: status, wcc_data (no attributes), count, committed, verf */
			rpc_reply_accepted(r.x, 1);
			r.x.u32(0);
			r.x.boolean(false);
			r.x.boolean(false);
			r.x.u32(4096);
			r.x.u32(2);
			r.x.u64(0x1234);
		}
		k.call = c.x.buf;
		k.reply = r.x.buf;
		if (rd) {
			k.call_iov = {{k.call.data(), k.call.size()}};
			k.reply_iov = around(k.reply, r.items[0].stream_offset, 4096);
			k.read_data = r.items[0].stream_offset;
			add_chunk(&k.pcl.write[0], 0, 4096);
			k.pcl.n_write = 1;
		} else {
			k.call_iov = around(k.call, c.items[0].stream_offset, 4096);
			k.reply_iov = {{k.reply.data(), k.reply.size()}};
			add_chunk(&k.pcl.read[0], uint32_t(c.items[0].position), 4096);
			k.pcl.n_read = 1;
		}
		return true;
	}
	uint32_t minor = name == "v40-read" ? 0 : name == "v42-read-plus" ? 2 : 1;
	bool wr = name == "v41-write";
	if (name != "v40-read" && name != "v41-read" && name != "v41-write" && name != "v42-read-plus")
		return false;
	Compound c(1, minor, (minor ? 1 : 0) + 2 + (wr ? 1 : 0));
	CompoundRes r(1, 0, (minor ? 1 : 0) + 2 + (wr ? 1 : 0));
	if (minor) {
		c.op_sequence(sid(), 5, 0);
		r.res_sequence(sid(), 5, 0);
	}
	c.op_putfh(fh);
	r.res_putfh();
	if (wr) {
		c.op_write(0, data);
		c.op_getattr();
		r.res_sample(WRITE);
		r.res_getattr();
	} else if (minor == 2) {
		c.op_read_plus(0, 4096);
		r.res_read_plus(true, {{true, 0, data, 0}});
	} else {
		c.op_read(0, 4096);
		r.res_read(data, true);
	}
	k.call = c.x.buf;
	k.reply = r.x.buf;
	if (wr) {
		k.call_iov = around(k.call, c.items[0].stream_offset, 4096);
		k.reply_iov = {{k.reply.data(), k.reply.size()}};
		add_chunk(&k.pcl.read[0], uint32_t(c.items[0].position), 4096);
		k.pcl.n_read = 1;
	} else {
		k.call_iov = {{k.call.data(), k.call.size()}};
		k.reply_iov = around(k.reply, r.items[0].stream_offset, 4096);
		k.read_data = r.items[0].stream_offset;
		add_chunk(&k.pcl.write[0], 0, 4096);
		k.pcl.n_write = 1;
	}
	return true;
}

} // namespace

/* One op: what the plugin asks of the ULB per Call and Reply (callgrind
 * collects inside this function only, and its compiler clones:
 * ulb_cost.sh toggles on 'ulb_cost_op*'). */
extern "C" __attribute__((noinline)) int ulb_cost_op(Case *k, struct ulb_call *c)
{
	struct rr_reply_plan plan;
	struct ulb_reply_info info;

	if (ulb_call_scan(k->call_iov.data(), int(k->call_iov.size()), nullptr, c) != ULB_SCAN_OK ||
	    ulb_call_check_read_chunks(c, &k->pcl) != ULB_DDP_OK)
		return -1;
	ulb_reply_plan(c, k->reply_iov.data(), int(k->reply_iov.size()), &k->pcl, k->read_data,
		       &plan, &info);
	return plan.deliverable ? int(plan.nspans) : -1;
}

int main(int argc, char **argv)
{
	static Case k;
	static struct ulb_call c;

	if (argc != 3 || !build(argv[1], k)) {
		fprintf(stderr, "usage: ulb_cost v3-read|v3-write|v40-read|v41-read|v41-write|"
				"v42-read-plus N\n");
		return 2;
	}
	long n = atol(argv[2]);
	int want = k.pcl.n_write; /* READ: one span; WRITE: none */
	for (long i = 0; i < n; i++) {
		if (ulb_cost_op(&k, &c) != want) {
			fprintf(stderr, "%s: unexpected ULB answer\n", argv[1]);
			return 1;
		}
	}
	return 0;
}
