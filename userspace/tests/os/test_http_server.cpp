// SPDX-License-Identifier: GPL-2.0
// The HTTP server of monitor --serve: what it answers, and what a client
// that does not finish its request can hold.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <atomic>
#include <chrono>
#include <netinet/in.h>
#include <poll.h>
#include <optional>
#include <string>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

#include "ptwalk/clock.hpp"
#include "ptwalk/fd.hpp"
#include "ptwalk/http_server.hpp"

using namespace ptwalk;

TEST(Http, ParsesListenAddresses)
{
	std::string h, e;
	int p = 0;
	EXPECT_TRUE(parse_listen_address("127.0.0.1:9632", &h, &p, &e));
	EXPECT_EQ(h, "127.0.0.1");
	EXPECT_EQ(p, 9632);
	EXPECT_TRUE(parse_listen_address("[::1]:80", &h, &p, &e));
	EXPECT_EQ(h, "::1");
	EXPECT_FALSE(parse_listen_address("127.0.0.1", &h, &p, &e));
	EXPECT_FALSE(parse_listen_address("127.0.0.1:0", &h, &p, &e));
	EXPECT_FALSE(parse_listen_address("127.0.0.1:70000", &h, &p, &e));
	EXPECT_FALSE(parse_listen_address("127.0.0.1:9x", &h, &p, &e));
	EXPECT_FALSE(parse_listen_address("::1:80", &h, &p, &e));
	EXPECT_FALSE(parse_listen_address(":80", &h, &p, &e));
}

namespace {

// A connection to 127.0.0.1:port from the loopback address `from`.
Fd connect_from(int port, const char *from = "127.0.0.1")
{
	Fd s(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
	sockaddr_in src{}, a{};
	src.sin_family = a.sin_family = AF_INET;
	inet_pton(AF_INET, from, &src.sin_addr);
	a.sin_port = htons(uint16_t(port));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	timeval tv{5, 0};
	setsockopt(s.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (bind(s.get(), reinterpret_cast<sockaddr *>(&src), sizeof(src)) != 0 ||
	    connect(s.get(), reinterpret_cast<sockaddr *>(&a), sizeof(a)) != 0)
		return Fd();
	return s;
}

// Everything until the server closes (or 5 s pass); "connect failed".
std::string http_get(int port, const std::string &req)
{
	Fd s = connect_from(port);
	if (!s)
		return "connect failed";
	(void)!send(s.get(), req.data(), req.size(), MSG_NOSIGNAL);
	shutdown(s.get(), SHUT_WR);
	std::string out;
	char b[4096];
	ssize_t n;
	while ((n = read(s.get(), b, sizeof(b))) > 0)
		out.append(b, size_t(n));
	return out;
}

// Whether the server has closed s within ms (reads and drops any answer).
bool closed_within(int s, int ms)
{
	const uint64_t end = now_ns() + uint64_t(ms) * 1'000'000;
	for (;;) {
		const uint64_t now = now_ns();
		if (now >= end)
			return false;
		pollfd p{s, POLLIN, 0};
		if (poll(&p, 1, int((end - now) / 1'000'000) + 1) <= 0)
			continue;
		char b[4096];
		if (recv(s, b, sizeof(b), MSG_DONTWAIT) <= 0)
			return true;
	}
}

HttpServer::Response metrics_only(const std::string &path)
{
	HttpServer::Response r;
	if (path == "/metrics")
		r.body = "m 1\n";
	else {
		r.status = 404;
		r.body = "no\n";
	}
	return r;
}

} // namespace

TEST(Http, ServesOnLoopbackAndRejectsWhatItShould)
{
	HttpServer srv;
	std::string err;
	ASSERT_TRUE(srv.start("127.0.0.1", 0, metrics_only, &err)) << err;
	const int port = srv.port();
	std::string r = http_get(port, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
	EXPECT_EQ(r.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << r;
	EXPECT_NE(r.find("Content-Length: 4\r\n"), std::string::npos);
	EXPECT_EQ(r.substr(r.size() - 4), "m 1\n");
	r = http_get(port, "HEAD /metrics?x=1 HTTP/1.0\r\n\r\n"); // the query is not the path
	EXPECT_EQ(r.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << r;
	EXPECT_EQ(r.substr(r.size() - 4), "\r\n\r\n") << r; // no body
	EXPECT_EQ(http_get(port, "GET /x HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 404", 0), 0u);
	r = http_get(port, "POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc");
	EXPECT_EQ(r.rfind("HTTP/1.1 405", 0), 0u) << r;
	EXPECT_NE(r.find("Allow: GET, HEAD\r\n"), std::string::npos) << r;
	EXPECT_EQ(http_get(port, "DELETE /metrics HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 405", 0), 0u);
	EXPECT_EQ(srv.requests(), 5u);
	// not HTTP: a request line that does not parse, answered 400...
	EXPECT_EQ(http_get(port, "GET /metrics FOO/1.1\r\n\r\n").rfind("HTTP/1.1 400", 0), 0u);
	EXPECT_EQ(http_get(port, "GET /metrics HTTP/9.9\r\n\r\n").rfind("HTTP/1.1 505", 0), 0u);
	// ...or, with no request line at all, the connection closed unanswered
	// (libmicrohttpd has no response for what is not a request): at once,
	// or at the idle timeout when the end of input came with the bytes
	EXPECT_EQ(http_get(port, "garbage"), "");
	EXPECT_EQ(http_get(port, std::string("\x16\x03\x01\x00\xff\r\n\r\n", 8)), "");
	// headers past the request memory: 431 (RFC 6585); a path: 414
	const std::string big(2 << 20, 'a');
	r = http_get(port, "GET /metrics HTTP/1.1\r\nX-Pad: " + big + "\r\n\r\n");
	EXPECT_EQ(r.rfind("HTTP/1.1 431", 0), 0u) << r.substr(0, 80);
	r = http_get(port, "GET /" + big + " HTTP/1.1\r\n\r\n");
	EXPECT_EQ(r.rfind("HTTP/1.1 414", 0), 0u) << r.substr(0, 80);
	EXPECT_EQ(srv.requests(), 5u); // none of these reached the handler
	// the same port again: a clear error
	HttpServer again;
	EXPECT_FALSE(again.start("127.0.0.1", port, metrics_only, &err));
	EXPECT_NE(err.find("Address already in use"), std::string::npos) << err;
	srv.stop();
	srv.stop(); // idempotent
	EXPECT_EQ(http_get(port, "GET /metrics HTTP/1.1\r\n\r\n"), "connect failed");
}

// The hand-written server before this one served one connection at a time
// for up to 2 s each: one idle "GET /met" delayed every scrape by 2 s, 19
// stopped it. Now 40 idle connections (16 from one address, the limit, and
// more from others) delay nothing, and the idle ones are closed after the
// idle timeout.
TEST(Http, IdleClientsDelayNoOneAndAreClosed)
{
	HttpServer srv;
	std::string err;
	ASSERT_TRUE(srv.start("127.0.0.1", 0, metrics_only, &err)) << err;
	const int port = srv.port();
	std::vector<Fd> idle;
	const char *from[] = {"127.0.0.2", "127.0.0.3", "127.0.0.4"};
	// one more from the first address than its limit: one of them is
	// closed at once. Which one is the server's pool's order of accepting
	// them (its threads take them in any order): once a CI run's last one
	// was accepted and an earlier one closed in its stead.
	for (const char *a : from)
		for (unsigned i = 0; i < kHttpMaxPerIp + (a == from[0]); i++) {
			Fd s = connect_from(port, a);
			ASSERT_TRUE(s) << a;
			(void)!send(s.get(), "GET /met", 8, MSG_NOSIGNAL);
			idle.push_back(std::move(s));
		}
	std::optional<size_t> over;
	for (const uint64_t end = now_ns() + 1'000'000'000ull; !over && now_ns() < end;)
		for (size_t i = 0; i <= kHttpMaxPerIp && !over; i++)
			if (closed_within(idle[i].get(), 1))
				over = i;
	ASSERT_TRUE(over) << "none of " << kHttpMaxPerIp + 1 << " from one address closed in 1 s";
	idle.erase(idle.begin() + std::ptrdiff_t(*over));
	for (int i = 0; i < 5; i++) {
		const uint64_t t0 = now_ns();
		std::string r = http_get(port, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
		EXPECT_EQ(r.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << r;
		EXPECT_LT(now_ns() - t0, 500'000'000u) << "a scrape waited behind idle clients";
	}
	// held open until the idle timeout, then closed; none answered
	for (auto &s : idle)
		EXPECT_FALSE(closed_within(s.get(), 1));
	const uint64_t t0 = now_ns();
	for (auto &s : idle)
		EXPECT_TRUE(closed_within(s.get(), (kHttpIdleTimeoutS + 3) * 1000));
	EXPECT_LT(now_ns() - t0, (kHttpIdleTimeoutS + 3) * 1'000'000'000ull);
	srv.stop();
}
