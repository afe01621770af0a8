// SPDX-License-Identifier: GPL-2.0
// The HTTP server of a Prometheus scrape, on libmicrohttpd: an epoll
// thread pool answers several requests at once and a slow client holds
// only its own connection. What one client can take is bounded: a
// connection idle for kHttpIdleTimeoutS is closed, at most kHttpMaxPerIp
// connections from one address and kHttpMaxConnections in all, a
// request's headers within kHttpRequestMemory (else 431). GET and HEAD
// only (else 405); TLS and basic auth from a --web-config file.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "ptwalk/web_config.hpp"

namespace ptwalk {

inline constexpr unsigned kHttpThreads = 4;
inline constexpr unsigned kHttpIdleTimeoutS = 5;
inline constexpr unsigned kHttpMaxConnections = 256;
inline constexpr unsigned kHttpMaxPerIp = 16;
inline constexpr size_t kHttpRequestMemory = 32 * 1024;

// "ADDR:PORT" ("127.0.0.1:9632", "[::1]:9632", "localhost:9632"). false
// with *err when malformed (port not 1..65535, no colon, ...).
bool parse_listen_address(const std::string &s, std::string *host, int *port, std::string *err);

class HttpServer {
public:
	struct Response {
		int status = 200;
		std::string content_type = "text/plain; charset=utf-8";
		std::string body;
	};
	// Called with the request's path (no query) on the server's threads,
	// several at once: it must be thread-safe.
	using Handler = std::function<Response(const std::string &path)>;

	HttpServer();
	~HttpServer(); // stop()
	HttpServer(const HttpServer &) = delete;
	HttpServer &operator=(const HttpServer &) = delete;

	// Binds and listens (SO_REUSEADDR), then serves on its threads. false
	// with *err ("listen on 127.0.0.1:9632: Address already in use").
	// With web.tls() over TLS only; with web.client_ca_pem a client
	// without a certificate it signed is disconnected unanswered; with
	// web.users every request needs basic auth (else 401).
	bool start(const std::string &host, int port, Handler h, std::string *err,
		   const WebConfig &web = {});
	int port() const;               // the bound port (useful with port 0)
	void stop();                    // idempotent; joins the threads, closes every connection
	unsigned long requests() const; // requests handed to the handler or refused (405)

private:
	struct Impl;
	std::unique_ptr<Impl> impl_;
};

} // namespace ptwalk
