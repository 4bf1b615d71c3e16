// SPDX-License-Identifier: MIT
/*
 * nfsbench_v41.cc - the NFSv4.1 side of nfsbench: the same operations as
 * its NFSv3 ones, as COMPOUNDs (SEQUENCE, PUTFH, the operation) on one
 * session, through the tests' NFSv4.1 client (tests/support/nfs_client.h,
 * written from RFC 8881 and RFC 8267), over the same transports: RPC-over-
 * RDMA through the independent requester, or TCP with record marking. One
 * session slot, so one call at a time: bench A's shape (queue depth 1).
 */
#include "nfsbench_v41.h"

#include <cstdio>
#include <memory>

#include "support/nfs_client.h"

namespace {

int fail(const std::string &m)
{
	fprintf(stderr, "nfsbench: v4.1: %s\n", m.c_str());
	return 1;
}

} // namespace

int nfsbench_v41(const V41Run &r)
{
	std::string err;
	std::unique_ptr<nfsc::Transport> t;

	if (!r.rdma.empty()) {
		t = nfsc::RdmaTransport::connect(r.rdma, &err);
	} else {
		size_t colon = r.tcp.rfind(':');
		if (colon == std::string::npos)
			return fail("--tcp wants HOST:PORT");
		t = nfsc::TcpTransport::connect(r.tcp.substr(0, colon),
						uint16_t(std::stoi(r.tcp.substr(colon + 1))), &err);
	}
	if (!t)
		return fail("connect: " + err);

	nfsc::Nfs4 c(*t, 1);
	nfsc::Fh root, fh;
	nfsc::Stateid sid;
	if (c.mount())
		return fail("EXCHANGE_ID/CREATE_SESSION/RECLAIM_COMPLETE: " + c.err());
	if (c.lookup_path(r.exp, &root))
		return fail("LOOKUP " + r.exp + ": " + c.err());
	if (c.open_create(root, "bench41.dat", &fh, &sid))
		return fail("OPEN: " + c.err());
	/* Fill the first MiB so READs return data. */
	if (c.write(fh, sid, 0, nfsxdr::pattern(1u << 20, 7)))
		return fail("WRITE (fill): " + c.err());

	uint32_t size = r.op == "getattr" ? 0 : r.op.find("1m") != std::string::npos ? 1u << 20 : 4096;
	bool is_write = r.op.rfind("write", 0) == 0;
	nfsc::Bytes data = is_write ? nfsxdr::pattern(size, 1) : nfsc::Bytes();
	uint64_t span = size ? (1u << 20) / size : 1, errors = 0, seq = 0;
	std::string first_err;
	auto one = [&]() {
		uint64_t off = (seq++ % span) * size;
		int rc;
		if (r.op == "getattr") {
			nfsc::Attr a;
			rc = c.getattr(fh, &a);
		} else if (is_write) {
			rc = c.write(fh, sid, off, data);
		} else {
			nfsc::Bytes got;
			bool eof = false;
			rc = c.read(fh, sid, off, size, &got, &eof);
			if (!rc && got.size() != size)
				rc = -1;
		}
		if (rc && !errors++)
			first_err = r.op + ": " + c.err();
	};
	for (uint64_t i = 0; i < r.warmup; i++)
		one();
	errors = 0;
	r.sync("WARM");
	double t0 = nfsbench_now();
	for (uint64_t i = 0; i < r.count; i++)
		one();
	double dt = nfsbench_now() - t0;
	printf("{\"transport\":\"%s\",\"op\":\"v41%s\",\"qd\":1,\"ops\":%llu,\"secs\":%.4f,"
	       "\"ops_per_s\":%.1f,\"MBps\":%.2f,\"errors\":%llu,\"first_err\":\"%s\"}\n",
	       r.rdma.empty() ? "tcp" : "rdma", r.op.c_str(), (unsigned long long)r.count, dt,
	       r.count / dt, double(r.count) * size / dt / 1e6, (unsigned long long)errors,
	       first_err.c_str());
	fflush(stdout);
	r.sync("END");
	c.close(fh, sid);
	c.destroy_session();
	return errors ? 1 : 0;
}
