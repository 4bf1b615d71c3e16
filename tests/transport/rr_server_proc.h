// SPDX-License-Identifier: MIT
/*
 * rr_server_proc.h - runs tests/transport/rr_test_server as a child process
 * (fork + exec) so that the engine and the requester never share an address
 * space: the test talks to it over the fabric and reads its stats as JSON.
 */
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#ifndef RR_TEST_SERVER
#error "RR_TEST_SERVER (path of rr_test_server) must be defined"
#endif

namespace rrtest {

struct ServerOpts {
	std::vector<std::string> args;	/* after the address */
	std::map<std::string, std::string> env;	/* e.g. RPCRDMA_SOFT_FAULT */
	bool tcp = false;
	std::string tcp_host = "127.0.0.1"; /* an IPv6 one is bracketed */
};

class ServerProc {
      public:
	using Opts = ServerOpts;

	ServerProc() = default;
	~ServerProc()
	{
		if (pid_ > 0) {
			kill(pid_, SIGKILL);
			waitpid(pid_, nullptr, 0);
		}
		if (in_ >= 0)
			close(in_);
		if (out_ >= 0)
			close(out_);
		if (!path_.empty())
			unlink(path_.c_str());
	}

	/* Start and wait for READY; false (with why()) on failure. */
	bool start(const Opts &o)
	{
		static std::atomic<int> seq{0};
		char buf[128];
		if (o.tcp) {
			/* a port per process and test, away from the ephemeral range */
			int port = 20000 + (getpid() * 7 + seq++ * 13) % 9000;
			bool v6 = o.tcp_host.find(':') != std::string::npos;
			snprintf(buf, sizeof(buf), "tcp:%s%s%s:%d", v6 ? "[" : "",
				 o.tcp_host.c_str(), v6 ? "]" : "", port);
		} else {
			snprintf(buf, sizeof(buf), "unix:/tmp/rrtt-%d-%d.sock", int(getpid()), seq++);
			path_ = std::string(buf + 5);
			unlink(path_.c_str());
		}
		addr_ = buf;
		int pin[2], pout[2];
		if (pipe(pin) || pipe(pout))
			return fail("pipe");
		pid_ = fork();
		if (pid_ < 0)
			return fail("fork");
		if (pid_ == 0) {
			dup2(pin[0], 0);
			dup2(pout[1], 1);
			close(pin[0]);
			close(pin[1]);
			close(pout[0]);
			close(pout[1]);
			for (const auto &e : o.env)
				setenv(e.first.c_str(), e.second.c_str(), 1);
			std::vector<char *> argv;
			argv.push_back(const_cast<char *>(RR_TEST_SERVER));
			argv.push_back(const_cast<char *>(addr_.c_str()));
			for (const auto &a : o.args)
				argv.push_back(const_cast<char *>(a.c_str()));
			argv.push_back(nullptr);
			execv(RR_TEST_SERVER, argv.data());
			_exit(127);
		}
		close(pin[0]);
		close(pout[1]);
		in_ = pin[1];
		out_ = pout[0];
		fcntl(in_, F_SETFD, FD_CLOEXEC);
		fcntl(out_, F_SETFD, FD_CLOEXEC);
		std::string l;
		if (!line(&l, 10000))
			return fail("no READY from rr_test_server (exit " +
				    std::to_string(reap(0)) + ")");
		if (l != "READY")
			return fail("rr_test_server said: " + l);
		return true;
	}

	const std::string &addr() const
	{
		return addr_;
	}
	const std::string &why() const
	{
		return why_;
	}
	pid_t pid() const
	{
		return pid_;
	}

	/* Ask for the stats line; returns field -> value (empty on failure). */
	std::map<std::string, uint64_t> stats()
	{
		std::map<std::string, uint64_t> m;
		if (in_ < 0 || write(in_, "stats\n", 6) != 6)
			return m;
		std::string l;
		if (line(&l, 5000))
			m = parse(l);
		return m;
	}

	/* Send one command line; returns its one-line answer's fields. */
	std::map<std::string, uint64_t> command(const std::string &cmd)
	{
		std::map<std::string, uint64_t> m;
		std::string c = cmd + "\n";
		if (in_ < 0 || write(in_, c.data(), c.size()) != (ssize_t)c.size())
			return m;
		std::string l;
		if (line(&l, 5000))
			m = parse(l);
		return m;
	}

	/* True while the child has not exited. */
	bool alive()
	{
		if (pid_ <= 0)
			return false;
		int st;
		pid_t r = waitpid(pid_, &st, WNOHANG);
		if (r == pid_) {
			pid_ = -1;
			status_ = st;
			return false;
		}
		return true;
	}

	/*
	 * Close stdin (the server prints its stats, tears down, prints its upper
	 * layer's counters and exits); returns the exit code, 128+signal when
	 * killed, -1 when it had to be killed after @timeout_ms. @final gets
	 * every field printed, later lines overriding earlier ones.
	 */
	int stop(std::map<std::string, uint64_t> *final = nullptr, int timeout_ms = 5000)
	{
		if (in_ >= 0) {
			close(in_);
			in_ = -1;
		}
		std::string l;
		std::map<std::string, uint64_t> all;
		auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
		while (line(&l, left(end)))
			for (const auto &kv : parse(l))
				all[kv.first] = kv.second;	/* later lines win */
		if (final)
			*final = all;
		return reap(left(end));
	}

	static std::map<std::string, uint64_t> parse(const std::string &l)
	{
		std::map<std::string, uint64_t> m;
		size_t i = 0;
		while ((i = l.find('"', i)) != std::string::npos) {
			size_t j = l.find('"', i + 1);
			if (j == std::string::npos)
				break;
			std::string k = l.substr(i + 1, j - i - 1);
			size_t c = l.find(':', j);
			if (c == std::string::npos)
				break;
			m[k] = strtoull(l.c_str() + c + 1, nullptr, 10);
			i = c;
		}
		return m;
	}

      private:
	static int left(std::chrono::steady_clock::time_point end)
	{
		auto d = std::chrono::duration_cast<std::chrono::milliseconds>(
				 end - std::chrono::steady_clock::now())
				 .count();
		return d < 0 ? 0 : int(d);
	}
	bool fail(const std::string &w)
	{
		why_ = w;
		return false;
	}
	/* One line from the child's stdout within @timeout_ms. */
	bool line(std::string *out, int timeout_ms)
	{
		auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
		for (;;) {
			size_t nl = buf_.find('\n');
			if (nl != std::string::npos) {
				*out = buf_.substr(0, nl);
				buf_.erase(0, nl + 1);
				return true;
			}
			if (out_ < 0)
				return false;
			pollfd p = {out_, POLLIN, 0};
			int t = left(end);
			if (t <= 0 || poll(&p, 1, t) <= 0)
				return false;
			char b[4096];
			ssize_t n = read(out_, b, sizeof(b));
			if (n <= 0) {
				close(out_);
				out_ = -1;
				continue;
			}
			buf_.append(b, size_t(n));
		}
	}
	int reap(int timeout_ms)
	{
		if (pid_ <= 0)
			return decode(status_);
		auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
		for (;;) {
			int st;
			pid_t r = waitpid(pid_, &st, WNOHANG);
			if (r == pid_) {
				pid_ = -1;
				status_ = st;
				return decode(st);
			}
			if (left(end) <= 0) {
				dump_stacks();
				kill(pid_, SIGKILL);
				waitpid(pid_, nullptr, 0);
				pid_ = -1;
				return -1;
			}
			usleep(10000);
		}
	}
	/* A hung server: print its threads' stacks (if gdb is there) for the log. */
	void dump_stacks()
	{
		if (getenv("RR_TEST_NO_GDB") || access("/usr/bin/gdb", X_OK))
			return;
		fprintf(stderr, "rr_test_server %d did not exit; its threads:\n", int(pid_));
		std::string cmd = "/usr/bin/gdb -p " + std::to_string(pid_) +
				  " -batch -ex 'thread apply all bt' 2>/dev/null | grep -E '^(Thread|#)' >&2";
		if (system(cmd.c_str()) != 0)
			fprintf(stderr, "(gdb failed)\n");
	}
	static int decode(int st)
	{
		if (WIFEXITED(st))
			return WEXITSTATUS(st);
		if (WIFSIGNALED(st))
			return 128 + WTERMSIG(st);
		return -1;
	}

	pid_t pid_ = -1;
	int in_ = -1, out_ = -1;
	int status_ = 0;
	std::string addr_, path_, why_, buf_;
};

} // namespace rrtest
