package proxy

import (
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/agentctx/agentctx/internal/base/httpguard"
	"github.com/agentctx/agentctx/internal/lib/family"
)

// refuseBrowser refuses, before any work, what a web page could make a
// browser send the proxy (issue 49.4: 20 cross-origin text/plain POSTs
// to /v1/messages left 180 MB of artifacts): a request carrying an
// Origin other than the proxy's own loopback origin (a page's fetch to
// http://127.0.0.1:8787, or a DNS rebinding's same-origin one, sends its
// own), and a model request whose Content-Type is one a page may send
// without a CORS preflight (text/plain, a form). The statistics, metrics
// and dashboard GETs are left to their guard (httpguard): a page's own
// GETs carry no Origin, and what they answer a page cannot read. It
// reports whether it answered r: 403, with a one-line JSON error in the
// API's error shape.
func (s *Server) refuseBrowser(w http.ResponseWriter, r *http.Request) bool {
	get := r.Method == http.MethodGet || r.Method == http.MethodHead
	if get && (r.URL.Path == StatsPath || r.URL.Path == MetricsPath || s.isDashboard(r.URL.Path)) {
		return false
	}
	rt := s.route(r)
	var msg string
	for _, o := range r.Header.Values("Origin") {
		if !ownOrigin(o, r.Host) {
			msg = "agentctx proxy: cross-origin browser requests are refused (Origin is not this proxy's own loopback origin); nothing was forwarded or stored"
			break
		}
	}
	if msg == "" && rt.api != "" && browserContentType(r.Header.Get("Content-Type")) {
		msg = "agentctx proxy: a model request must be sent as Content-Type: application/json (text/plain and form bodies are what a web page sends); nothing was forwarded or stored"
	}
	if msg == "" {
		return false
	}
	writeFamilyError(w, rt.fam, http.StatusForbidden, family.Error{Type: "permission_error", Code: "forbidden", Message: msg})
	s.log.Info("proxy: refused a browser request", "method", r.Method, "path", r.URL.Path, "status", http.StatusForbidden)
	return true
}

// ownOrigin reports whether origin (an Origin header's value) is the
// proxy's own loopback origin: http(s) on the host and port the request
// is addressed to, which names this machine's loopback.
func ownOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false // "null" (a sandboxed page, a file), or not an origin
	}
	return strings.EqualFold(u.Host, host) && httpguard.IsLoopback(u.Hostname())
}

// browserContentType reports whether ct is one of the content types a web
// page may POST cross-origin without a CORS preflight.
func browserContentType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		mt = strings.ToLower(strings.TrimSpace(strings.Split(ct, ";")[0]))
	}
	switch mt {
	case "text/plain", "application/x-www-form-urlencoded", "multipart/form-data":
		return true
	}
	return false
}

// writeFamilyError writes an error in the shape of a family's errors.
func writeFamilyError(w http.ResponseWriter, f family.Family, status int, e family.Error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(f.ErrorBody(e))
}
