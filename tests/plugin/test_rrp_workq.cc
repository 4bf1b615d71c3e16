// SPDX-License-Identifier: MIT
// The worker pool's queue (src/plugin/rrp_workq.c), driven the way the
// plugin drives it: producers queue work items, worker threads run them.
// Checked from the outside: every item runs exactly once, under concurrent
// producers and workers, past the ring's capacity (the overflow list), and
// with no worker running while items pile up.
#include <gtest/gtest.h>

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

extern "C" {
#include "plugin/rrp_workq.h"
}

namespace {

struct Item {
	rrp_work w;
	std::atomic<int> runs{0};
};

std::atomic<long> total_runs{0};

void run_item(void *arg)
{
	static_cast<Item *>(arg)->runs.fetch_add(1);
	total_runs.fetch_add(1);
}

void exit_worker(void *) { pthread_exit(nullptr); }

void init_item(Item &it)
{
	it.w.next = nullptr;
	it.w.fn = run_item;
	it.w.arg = &it;
	it.w.heap = false;
}

// Workers run until one exit item per worker is queued behind the rest.
struct Workers {
	std::vector<pthread_t> t;
	explicit Workers(int n) : t(n)
	{
		for (auto &th : t)
			EXPECT_EQ(pthread_create(&th, nullptr, rrp_worker_main, nullptr), 0);
	}
	void stop()
	{
		for (size_t i = 0; i < t.size(); i++)
			EXPECT_TRUE(rrp_queue_fn(exit_worker, nullptr));
		for (auto &th : t)
			pthread_join(th, nullptr);
		t.clear();
	}
};

bool wait_total(long want)
{
	for (int i = 0; i < 2000 && total_runs.load() < want; i++)
		std::this_thread::sleep_for(std::chrono::milliseconds(5));
	return total_runs.load() == want;
}

TEST(WorkQueue, ConcurrentProducersAndWorkersRunEachItemOnce)
{
	const int kProducers = 4, kPerProducer = 20000;
	std::vector<Item> items(kProducers * kPerProducer);
	for (auto &it : items)
		init_item(it);
	total_runs = 0;
	Workers w(3);
	std::vector<std::thread> prod;
	for (int p = 0; p < kProducers; p++)
		prod.emplace_back([&, p] {
			for (int i = 0; i < kPerProducer; i++)
				rrp_queue_work(&items[p * kPerProducer + i].w);
		});
	for (auto &t : prod)
		t.join();
	ASSERT_TRUE(wait_total((long)items.size())) << total_runs.load();
	w.stop();
	for (size_t i = 0; i < items.size(); i++)
		ASSERT_EQ(items[i].runs.load(), 1) << "item " << i;
}

// More items than the ring holds, queued with no worker running: the rest
// wait on the overflow list, and all of them run once workers start.
TEST(WorkQueue, BeyondTheRingWithNoWorkerRunning)
{
	const size_t n = 3 * RRP_WORKQ_RING + 17;
	std::vector<Item> items(n);
	for (auto &it : items)
		init_item(it);
	total_runs = 0;
	for (auto &it : items)
		rrp_queue_work(&it.w);
	EXPECT_EQ(total_runs.load(), 0);
	Workers w(2);
	ASSERT_TRUE(wait_total((long)n)) << total_runs.load();
	w.stop();
	for (size_t i = 0; i < n; i++)
		ASSERT_EQ(items[i].runs.load(), 1) << "item " << i;
}

// One producer, one worker: items run in the order queued, across the
// ring's wrap-around and through the overflow list.
TEST(WorkQueue, OneWorkerRunsItemsInOrder)
{
	static std::vector<int> order;
	struct Seq {
		rrp_work w;
		int id;
	};
	const int n = 2 * RRP_WORKQ_RING + 5;
	std::vector<Seq> s(n);
	order.clear();
	total_runs = 0;
	for (int i = 0; i < n; i++) {
		s[i].w.next = nullptr;
		s[i].w.fn = [](void *a) {
			order.push_back(static_cast<Seq *>(a)->id);
			total_runs.fetch_add(1);
		};
		s[i].w.arg = &s[i];
		s[i].w.heap = false;
		s[i].id = i;
	}
	Workers w(1);
	for (int i = 0; i < n; i++)
		rrp_queue_work(&s[i].w);
	ASSERT_TRUE(wait_total(n)) << total_runs.load();
	w.stop();
	ASSERT_EQ(order.size(), (size_t)n);
	for (int i = 0; i < n; i++)
		ASSERT_EQ(order[i], i);
}

} // namespace
