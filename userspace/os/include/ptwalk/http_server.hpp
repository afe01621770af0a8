// SPDX-License-Identifier: GPL-2.0
// A minimal HTTP/1.1 server for a Prometheus scrape: one thread, one
// connection at a time, GET only, "Connection: close". Requests are bounded
// (8 KiB, 2 s to arrive) so a stuck client cannot hold the server.
#pragma once

#include <functional>
#include <memory>
#include <string>

namespace ptwalk {

// "ADDR:PORT" ("127.0.0.1:9632", "[::1]:9632", "localhost:9632"). false
// with *err when malformed (port not 1..65535, no colon, ...).
bool parse_listen_address(const std::string &s, std::string *host, int *port,
			  std::string *err);

class HttpServer {
public:
	struct Response {
		int status = 200;
		std::string content_type = "text/plain; charset=utf-8";
		std::string body;
	};
	// Called on the server thread with the request path.
	using Handler = std::function<Response(const std::string &path)>;

	HttpServer();
	~HttpServer(); // stop()
	HttpServer(const HttpServer &) = delete;
	HttpServer &operator=(const HttpServer &) = delete;

	// Binds and listens (SO_REUSEADDR), then serves on a thread. false
	// with *err ("listen on 127.0.0.1:9632: Address already in use").
	bool start(const std::string &host, int port, Handler h, std::string *err);
	int port() const; // the bound port (useful with port 0)
	void stop();       // idempotent; joins the thread
	unsigned long requests() const;

private:
	struct Impl;
	std::unique_ptr<Impl> impl_;
};

} // namespace ptwalk
