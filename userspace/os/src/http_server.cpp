// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/http_server.hpp"

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

#include "ptwalk/clock.hpp"
#include "ptwalk/fd.hpp"

namespace ptwalk {

bool parse_listen_address(const std::string &s, std::string *host, int *port,
			  std::string *err)
{
	size_t colon = s.rfind(':');
	if (colon == std::string::npos || colon == 0 || colon + 1 >= s.size()) {
		*err = "want ADDR:PORT (e.g. 127.0.0.1:9632)";
		return false;
	}
	std::string h = s.substr(0, colon);
	if (h.front() == '[') {
		if (h.size() < 3 || h.back() != ']') {
			*err = "want [IPV6]:PORT";
			return false;
		}
		h = h.substr(1, h.size() - 2);
	} else if (h.find(':') != std::string::npos) {
		*err = "an IPv6 address needs brackets: [ADDR]:PORT";
		return false;
	}
	int p = 0;
	const char *b = s.data() + colon + 1, *e = s.data() + s.size();
	auto r = std::from_chars(b, e, p);
	if (r.ec != std::errc() || r.ptr != e || p < 1 || p > 65535) {
		*err = "port '" + s.substr(colon + 1) + "' is not 1..65535";
		return false;
	}
	*host = h;
	*port = p;
	return true;
}

struct HttpServer::Impl {
	Fd listen_fd, stop_fd;
	std::thread thread;
	Handler handler;
	int port = 0;
	bool running = false;
	std::atomic<unsigned long> requests{0};

	void serve_one(int c);
	void run();
};

HttpServer::HttpServer() : impl_(std::make_unique<Impl>()) {}
HttpServer::~HttpServer() { stop(); }

static std::string status_text(int s)
{
	switch (s) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	default: return "Error";
	}
}

static void send_all(int c, const std::string &s)
{
	size_t off = 0;
	while (off < s.size()) {
		pollfd p{c, POLLOUT, 0};
		if (poll(&p, 1, 2000) <= 0)
			return; // client gone or stuck
		ssize_t n = send(c, s.data() + off, s.size() - off, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return;
		}
		off += size_t(n);
	}
}

void HttpServer::Impl::serve_one(int c)
{
	std::string req;
	const uint64_t deadline = now_ns() + 2'000'000'000ull;
	while (req.find("\r\n\r\n") == std::string::npos && req.size() < 8192) {
		uint64_t now = now_ns();
		if (now >= deadline)
			break;
		pollfd p{c, POLLIN, 0};
		int r = poll(&p, 1, int((deadline - now) / 1'000'000) + 1);
		if (r <= 0)
			break;
		char buf[2048];
		ssize_t n = recv(c, buf, sizeof(buf), 0);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			break;
		req.append(buf, size_t(n));
	}
	Response resp;
	size_t eol = req.find("\r\n");
	if (req.find("\r\n\r\n") == std::string::npos) {
		resp = {req.empty() ? 408 : 400, "text/plain; charset=utf-8", "incomplete request\n"};
	} else {
		std::string line = req.substr(0, eol);
		size_t sp1 = line.find(' '), sp2 = line.rfind(' ');
		if (sp1 == std::string::npos || sp2 == sp1) {
			resp = {400, "text/plain; charset=utf-8", "bad request line\n"};
		} else {
			std::string method = line.substr(0, sp1);
			std::string path = line.substr(sp1 + 1, sp2 - sp1 - 1);
			if (size_t q = path.find('?'); q != std::string::npos)
				path.resize(q);
			if (method != "GET" && method != "HEAD")
				resp = {405, "text/plain; charset=utf-8", "GET only\n"};
			else {
				resp = handler(path);
				if (method == "HEAD")
					resp.body.clear();
			}
		}
	}
	requests++;
	std::string head = "HTTP/1.1 " + std::to_string(resp.status) + " " +
			   status_text(resp.status) + "\r\nContent-Type: " + resp.content_type +
			   "\r\nContent-Length: " + std::to_string(resp.body.size()) +
			   "\r\nConnection: close\r\n\r\n";
	send_all(c, head + resp.body);
}

void HttpServer::Impl::run()
{
	pollfd p[2] = {{listen_fd.get(), POLLIN, 0}, {stop_fd.get(), POLLIN, 0}};
	for (;;) {
		int n = poll(p, 2, 1000);
		if (n < 0 && errno != EINTR)
			return;
		if (p[1].revents & POLLIN)
			return;
		if (!(p[0].revents & POLLIN))
			continue;
		Fd c(accept4(listen_fd.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
		if (!c)
			continue; // ECONNABORTED, EMFILE...: try again later
		serve_one(c.get());
	}
}

bool HttpServer::start(const std::string &host, int port, Handler h, std::string *err)
{
	Impl &m = *impl_;
	const std::string where = (host.find(':') != std::string::npos ? "[" + host + "]" : host) +
				  ":" + std::to_string(port);
	addrinfo hints{}, *res = nullptr;
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	const std::string ps = std::to_string(port);
	if (int rc = getaddrinfo(host.c_str(), ps.c_str(), &hints, &res); rc != 0) {
		*err = "listen on " + where + ": " + gai_strerror(rc);
		return false;
	}
	int last = 0;
	for (addrinfo *a = res; a; a = a->ai_next) {
		Fd s(socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
			    a->ai_protocol));
		if (!s) {
			last = errno;
			continue;
		}
		int one = 1;
		setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(s.get(), a->ai_addr, a->ai_addrlen) != 0 || listen(s.get(), 16) != 0) {
			last = errno;
			continue;
		}
		sockaddr_storage ss{};
		socklen_t sl = sizeof(ss);
		getsockname(s.get(), reinterpret_cast<sockaddr *>(&ss), &sl);
		m.port = ss.ss_family == AF_INET6
				 ? ntohs(reinterpret_cast<sockaddr_in6 *>(&ss)->sin6_port)
				 : ntohs(reinterpret_cast<sockaddr_in *>(&ss)->sin_port);
		m.listen_fd = std::move(s);
		break;
	}
	freeaddrinfo(res);
	if (!m.listen_fd) {
		*err = "listen on " + where + ": " + strerror(last ? last : EINVAL);
		return false;
	}
	m.stop_fd.reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
	if (!m.stop_fd) {
		*err = std::string("eventfd: ") + strerror(errno);
		m.listen_fd.reset();
		return false;
	}
	m.handler = std::move(h);
	m.running = true;
	m.thread = std::thread([&m] { m.run(); });
	return true;
}

int HttpServer::port() const { return impl_->port; }
unsigned long HttpServer::requests() const { return impl_->requests.load(); }

void HttpServer::stop()
{
	Impl &m = *impl_;
	if (!m.running)
		return;
	m.running = false;
	uint64_t one = 1;
	(void)!write(m.stop_fd.get(), &one, sizeof(one));
	if (m.thread.joinable())
		m.thread.join();
	m.listen_fd.reset();
	m.stop_fd.reset();
}

} // namespace ptwalk
