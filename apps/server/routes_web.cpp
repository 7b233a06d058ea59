// The web page at / (and /index.html).
#include "routes.h"
#include "web_page.h"

namespace ggdiff::server {

void register_web_routes(httplib::Server& server, ServerContext&) {
    auto page = [](const httplib::Request&, httplib::Response& res) {
        res.set_header("Cache-Control", "no-cache");
        res.set_header("Content-Security-Policy",
                       "default-src 'self'; img-src 'self' data:; style-src 'unsafe-inline'; "
                       "script-src 'unsafe-inline'");
        res.set_content(web_page_html(), "text/html; charset=utf-8");
    };
    server.Get("/", page);
    server.Get("/index.html", page);
}

}  // namespace ggdiff::server
