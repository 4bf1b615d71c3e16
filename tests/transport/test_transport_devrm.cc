// SPDX-License-Identifier: MIT
/*
 * Device removal with connections and I/O in flight (issue #25): the soft
 * fabric's simulated removal (fab_soft_device_remove) in the server process.
 * The server survives, closes every connection, gives back everything it
 * had registered (the fabric's live MR count drops to 0), reports itself
 * not serving, refuses new connections, and once the device is back it
 * listens again by itself within RR_RELISTEN_S and serves a new connection.
 * Its exit status is checked (TearDown), so ASan/LSan findings fail it too.
 */
#include "fabric/fab_soft.h"
#include "rpcrdma/rr_xprt.h" /* RR_RELISTEN_S */
#include "transport/rr_transport_fixture.h"

using namespace rrtest;

namespace
{

class DeviceRemoval : public TransportTest
{
      protected:
	std::mt19937 rng{2525};
	int settle_ms = 5000; /* for the connections and registrations to go */

	/* Poll the server's stats until @key is @want or @ms went by. */
	uint64_t stat_when(const char *key, uint64_t want, int ms)
	{
		uint64_t v = srv.stats()[key];

		for (int i = 0; i < ms / 50 && v != want; i++) {
			usleep(50000);
			v = srv.stats()[key];
		}
		return v;
	}

	/* Calls of every kind left in flight on @q. */
	void load(Requester *q)
	{
		CallSpec force;
		force.force = true;
		/* Replies the server's worker sends 300 ms from now. */
		for (int i = 0; i < 3; i++) {
			TestCall c = call_delay(q->next_xid(), 300, random_bytes(rng, 512));
			EXPECT_GE(q->post(c.rpc, CallSpec()), 0);
		}
		/* Held by the upper layer, never answered. */
		EXPECT_GE(q->post(call_hold(q->next_xid()).rpc, force), 0);
		/* 1 MiB pulled by RDMA Read in 8 segments. */
		TestCall big = call_data(q->next_xid(), RRT_PROC_SINK, random_bytes(rng, 1 << 20));
		EXPECT_GE(q->post(big.rpc, read_spec(big, 8)), 0);
		/* 256 KiB pushed by RDMA Write. */
		TestCall src = call_source(q->next_xid(), 256 << 10, 7);
		CallSpec s;
		WriteChunkSpec w;
		w.segs.assign(4, 65536);
		s.writes.push_back(w);
		EXPECT_GE(q->post(src.rpc, s), 0);
		q->progress(0);
	}

	void run()
	{
		Requester *a = connect();
		Requester *b = connect();
		ASSERT_TRUE(a && b);
		ASSERT_TRUE(ping(a));
		ASSERT_TRUE(ping(b));
		ASSERT_EQ(srv.stats()["serving"], 1u);
		load(a);
		load(b);

		ASSERT_EQ(srv.command("device-remove")["device_remove"], 0u);

		EXPECT_TRUE(a->wait_disconnected(settle_ms)) << "client a still connected";
		EXPECT_TRUE(b->wait_disconnected(settle_ms)) << "client b still connected";
		a->disconnect();
		b->disconnect();
		EXPECT_EQ(stat_when("conns_listed", 0, settle_ms), 0u) << "connections not freed";
		EXPECT_EQ(stat_when("fab_mrs_live", 0, settle_ms), 0u)
		    << "memory still registered on the removed device";
		auto st = srv.stats();
		EXPECT_EQ(st["serving"], 0u);
		EXPECT_EQ(st["device_removals"], 1u);
		EXPECT_EQ(st["ul_conn_up"], st["ul_conn_down"]);
		EXPECT_TRUE(srv.alive());

		/* No device, no listener: a new client cannot connect. */
		RequesterOptions o;
		o.addr = srv.addr();
		std::string err;
		EXPECT_FALSE(Requester::connect(o, &err)) << "connected with the device removed";
		/* The server keeps trying (every RR_RELISTEN_S) and keeps failing. */
		EXPECT_GE(stat_when("relisten_tries", 2, (RR_RELISTEN_S + 2) * 1000), 2u);
		EXPECT_EQ(srv.stats()["serving"], 0u);

		ASSERT_EQ(srv.command("device-restore")["device_restore"], 0u);
		EXPECT_EQ(stat_when("serving", 1, (RR_RELISTEN_S + 2) * 1000), 1u)
		    << "not listening again " << RR_RELISTEN_S + 2
		    << " s after the device came back";
		Requester *c = connect();
		ASSERT_NE(c, nullptr);
		EXPECT_TRUE(ping(c));
		TestCall big = call_data(c->next_xid(), RRT_PROC_SINK, random_bytes(rng, 1 << 20));
		Reply r;
		ASSERT_TRUE(c->call(big.rpc, read_spec(big, 8), &r, 20000)) << c->last_error();
		size_t off;
		EXPECT_TRUE(rpc_success(r, big.xid, &off));
		EXPECT_EQ(srv.stats()["conns_listed"], 1u);
	}
};

class DeviceRemovalSrq : public DeviceRemoval
{
      protected:
	DeviceRemovalSrq()
	{
		sopts.args = {"--srq", "1"};
	}
};

/*
 * Three event threads on a device whose deregistrations are slow: while
 * evt[0] frees the connections and then gives back what was registered,
 * the other threads' once-a-second ticks give back their own idle send
 * chunks. Each thread's pools are its own to free: when evt[0] freed them
 * too, the two threads freed the same chunks (a double free, an abort).
 */
class DeviceRemovalSlowDereg : public DeviceRemoval
{
      protected:
	DeviceRemovalSlowDereg()
	{
		sopts.env["RPCRDMA_SOFT_FAULT"] = "dereg_delay_ms=100";
		sopts.env["RPCRDMA_TEST_EVENT_THREADS"] = "3";
		settle_ms = 30000;
	}
};

TEST_F(DeviceRemovalSlowDereg, EachThreadGivesBackItsOwnPools)
{
	run();
}

TEST_F(DeviceRemoval, ConnectionsClosedResourcesFreedListenerBack)
{
	run();
}

TEST_F(DeviceRemovalSrq, SharedReceivePoolReleasedAndRebuilt)
{
	run();
}

} // namespace
