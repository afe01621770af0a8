// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/http_server.hpp"

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <exception>
#include <fcntl.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <map>
#include <microhttpd.h>
#include <mutex>
#include <netdb.h>
#include <netinet/in.h>
#include <string_view>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "ptwalk/fd.hpp"

namespace ptwalk {

bool parse_listen_address(const std::string &s, std::string *host, int *port, std::string *err)
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

namespace {

struct DaemonStop {
	void operator()(MHD_Daemon *d) const { MHD_stop_daemon(d); }
};

// The same socket: a dup of it, not a number since reused by another.
bool same_socket(int a, int b)
{
	struct stat sa {
	}, sb{};
	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

} // namespace

struct HttpServer::Impl {
	Fd listen_fd;
	std::unique_ptr<MHD_Daemon, DaemonStop> daemon;
	Handler handler;
	int port = 0;
	std::atomic<unsigned long> requests{0};
	WebConfig web;
	// basic auth answers by user and SHA-256 of the password: bcrypt
	// costs ~0.1 s of CPU, not to be paid at each scrape
	std::mutex auth_mu;
	std::map<std::string, bool> auth_seen;

	bool authorized(MHD_Connection *c);
	bool client_verified(MHD_Connection *c);

	static MHD_Result on_request(void *cls, MHD_Connection *c, const char *url,
				     const char *method, const char *version,
				     const char *upload_data, size_t *upload_size, void **req_cls);
	bool listen_on(const std::string &host, int port, std::string *err);
};

HttpServer::HttpServer() : impl_(std::make_unique<Impl>()) {}
HttpServer::~HttpServer()
{
	stop();
}

// On MHD's threads, once the request's headers are in: answered at once
// (a GET has no body to wait for; a refused upload is not read).
MHD_Result HttpServer::Impl::on_request(void *cls, MHD_Connection *c, const char *url,
					const char *method, const char *, const char *, size_t *,
					void **)
{
	Impl &m = *static_cast<Impl *>(cls);
	if (!m.web.client_ca_pem.empty() && !m.client_verified(c))
		return MHD_NO; // closed unanswered, as a failed handshake would be
	if (!m.web.users.empty() && !m.authorized(c)) {
		static const char body[] = "unauthorized\n";
		MHD_Response *resp = MHD_create_response_from_buffer(
			sizeof(body) - 1, const_cast<char *>(body), MHD_RESPMEM_PERSISTENT);
		if (!resp)
			return MHD_NO;
		MHD_Result ok = MHD_queue_basic_auth_fail_response(c, "ptwalk", resp);
		MHD_destroy_response(resp);
		return ok;
	}
	const std::string_view meth(method);
	Response r;
	if (meth != MHD_HTTP_METHOD_GET && meth != MHD_HTTP_METHOD_HEAD)
		r = {MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain; charset=utf-8", "GET only\n"};
	else {
		try {
			r = m.handler(url);         // MHD answers HEAD without the body
		} catch (const std::exception &e) { // not through MHD's C frames
			r = {MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain; charset=utf-8",
			     std::string(e.what()) + "\n"};
		}
	}
	m.requests++;
	MHD_Response *resp = MHD_create_response_from_buffer(r.body.size(), r.body.data(),
							     MHD_RESPMEM_MUST_COPY);
	if (!resp)
		return MHD_NO; // out of memory: the connection is closed
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r.content_type.c_str());
	if (r.status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	MHD_Result ok = MHD_queue_response(c, unsigned(r.status), resp);
	MHD_destroy_response(resp);
	return ok;
}

bool HttpServer::Impl::client_verified(MHD_Connection *c)
{
	const MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	if (!ci || !ci->tls_session)
		return false;
	unsigned status = 0;
	auto session = static_cast<gnutls_session_t>(ci->tls_session);
	return gnutls_certificate_verify_peers2(session, &status) == 0 && status == 0;
}

bool HttpServer::Impl::authorized(MHD_Connection *c)
{
	char *pass = nullptr;
	char *user = MHD_basic_auth_get_username_password(c, &pass);
	std::unique_ptr<char, decltype(&MHD_free)> u(user, &MHD_free), p(pass, &MHD_free);
	if (!user || !pass)
		return false;
	auto it = web.users.find(user);
	if (it == web.users.end()) {
		// as long as a known user's check: the time tells no names
		(void)bcrypt_matches(web.users.begin()->second, pass);
		return false;
	}
	unsigned char digest[32];
	if (gnutls_hash_fast(GNUTLS_DIG_SHA256, pass, strlen(pass), digest) != 0)
		return false;
	const std::string key = std::string(user) + '\0' +
				std::string(reinterpret_cast<const char *>(digest), sizeof(digest));
	{
		std::lock_guard<std::mutex> g(auth_mu);
		if (auto seen = auth_seen.find(key); seen != auth_seen.end())
			return seen->second;
	}
	const bool ok = bcrypt_matches(it->second, pass);
	std::lock_guard<std::mutex> g(auth_mu);
	if (auth_seen.size() >= 256)
		auth_seen.clear(); // bounded: a stream of wrong passwords costs bcrypt each
	auth_seen[key] = ok;
	return ok;
}

// The listening socket is ours (the errors say where, as before); MHD
// serves a dup of it.
bool HttpServer::Impl::listen_on(const std::string &host, int p, std::string *err)
{
	const std::string where = (host.find(':') != std::string::npos ? "[" + host + "]" : host) +
				  ":" + std::to_string(p);
	addrinfo hints{}, *res = nullptr;
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	const std::string ps = std::to_string(p);
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
		if (bind(s.get(), a->ai_addr, a->ai_addrlen) != 0 ||
		    listen(s.get(), SOMAXCONN) != 0) {
			last = errno;
			continue;
		}
		sockaddr_storage ss{};
		socklen_t sl = sizeof(ss);
		getsockname(s.get(), reinterpret_cast<sockaddr *>(&ss), &sl);
		port = ss.ss_family == AF_INET6
			       ? ntohs(reinterpret_cast<sockaddr_in6 *>(&ss)->sin6_port)
			       : ntohs(reinterpret_cast<sockaddr_in *>(&ss)->sin_port);
		listen_fd = std::move(s);
		break;
	}
	freeaddrinfo(res);
	if (!listen_fd) {
		*err = "listen on " + where + ": " + strerror(last ? last : EINVAL);
		return false;
	}
	return true;
}

bool HttpServer::start(const std::string &host, int port, Handler h, std::string *err,
		       const WebConfig &web)
{
	Impl &m = *impl_;
	if (m.daemon) {
		*err = "the HTTP server is already running";
		return false;
	}
	if (!m.listen_on(host, port, err))
		return false;
	m.handler = std::move(h);
	m.web = web;
	m.auth_seen.clear();
	const int mhd_fd = fcntl(m.listen_fd.get(), F_DUPFD_CLOEXEC, 0);
	if (mhd_fd < 0) {
		*err = std::string("dup the listening socket: ") + strerror(errno);
		m.listen_fd.reset();
		return false;
	}
	// TLS options only with TLS (MHD refuses them otherwise); an empty
	// trust string ends nothing: MHD_OPTION_ARRAY lists what is set
	std::vector<MHD_OptionItem> tls;
	auto opt = [&tls](MHD_OPTION o, const std::string &pem) {
		tls.push_back({o, 0, const_cast<char *>(pem.c_str())});
	};
	if (m.web.tls()) {
		opt(MHD_OPTION_HTTPS_MEM_CERT, m.web.cert_pem);
		opt(MHD_OPTION_HTTPS_MEM_KEY, m.web.key_pem);
		if (!m.web.client_ca_pem.empty())
			opt(MHD_OPTION_HTTPS_MEM_TRUST, m.web.client_ca_pem);
	}
	tls.push_back({MHD_OPTION_END, 0, nullptr});
	// no MHD_USE_ERROR_LOG: a refused or timed-out client is not news
	m.daemon.reset(MHD_start_daemon(
		MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | (m.web.tls() ? MHD_USE_TLS : 0),
		0, nullptr, nullptr, &Impl::on_request, &m, MHD_OPTION_ARRAY, tls.data(),
		MHD_OPTION_LISTEN_SOCKET, MHD_socket(mhd_fd), MHD_OPTION_THREAD_POOL_SIZE,
		kHttpThreads, MHD_OPTION_CONNECTION_TIMEOUT, kHttpIdleTimeoutS,
		MHD_OPTION_CONNECTION_LIMIT, kHttpMaxConnections,
		MHD_OPTION_PER_IP_CONNECTION_LIMIT, kHttpMaxPerIp,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, kHttpRequestMemory, MHD_OPTION_END));
	if (!m.daemon) {
		const int e = errno;
		if (same_socket(mhd_fd, m.listen_fd.get()))
			close(mhd_fd); // MHD did not take it
		*err = std::string("start the HTTP server (libmicrohttpd): ") +
		       strerror(e ? e : EINVAL);
		m.listen_fd.reset();
		return false;
	}
	return true;
}

int HttpServer::port() const
{
	return impl_->port;
}
unsigned long HttpServer::requests() const
{
	return impl_->requests.load();
}

void HttpServer::stop()
{
	Impl &m = *impl_;
	m.daemon.reset(); // MHD_stop_daemon: joins its threads, closes its dup
	m.listen_fd.reset();
}

} // namespace ptwalk
