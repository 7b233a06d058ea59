// The web page served at / (plain HTML, CSS and JavaScript, embedded in the binary).
#pragma once

namespace ggdiff::server {

const char* web_page_html();

}  // namespace ggdiff::server
