// Package httpguard protects the local HTTP endpoints of agentctx (the
// proxy's stats and MCP, agentctx mcp --http) that expose what a
// workspace holds: listeners bind loopback unless told otherwise, a
// listener on another address needs a token, and without a token only
// requests from this machine (a loopback peer, or a Unix socket) addressed
// to a loopback name are answered: another machine cannot read them by
// saying Host: localhost, nor a web page through DNS rebinding.
package httpguard

import (
	"crypto/subtle"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// TokenHeader carries the token, as does "Authorization: Bearer <token>".
const TokenHeader = "X-Agentctx-Token"

// ErrTokenRequired is returned by ListenAddr for a non-loopback address
// without a token.
var ErrTokenRequired = errors.New("a listener on a non-loopback address needs a token (--token or AGENTCTX_TOKEN)")

// ListenAddr returns the address to listen on: a missing host means
// 127.0.0.1 (loopback unless told otherwise). An address that is not
// loopback (0.0.0.0, a LAN address, a host name that is not localhost)
// needs a token.
func ListenAddr(addr, token string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	if host == "" {
		return net.JoinHostPort("127.0.0.1", port), nil
	}
	if !IsLoopback(host) && token == "" {
		return "", ErrTokenRequired
	}
	return addr, nil
}

// IsLoopback reports whether host (without a port) names this machine's
// loopback: localhost, 127.0.0.0/8, ::1.
func IsLoopback(host string) bool {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Allowed reports whether a request may read what the endpoint serves:
// with a token, the request must carry it; without one, it must come from
// this machine (LoopbackPeer) and be addressed (its Host header) to a
// loopback name.
func Allowed(r *http.Request, token string) bool {
	if token != "" {
		got := r.Header.Get(TokenHeader)
		if a := r.Header.Get("Authorization"); got == "" && len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
			got = a[7:]
		}
		return subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
	}
	return LoopbackPeer(r) && loopbackHost(r)
}

// LoopbackPeer reports whether r came from this machine: its peer
// (r.RemoteAddr) is a loopback address, or it came through a Unix socket
// (whose file's permissions say who may connect). The Host header says
// nothing of the peer: any client may send Host: localhost.
func LoopbackPeer(r *http.Request) bool {
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && la != nil && la.Network() == "unix" {
		return true
	}
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	return ap.Addr().WithZone("").Unmap().IsLoopback()
}

func loopbackHost(r *http.Request) bool {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return IsLoopback(host)
}

// Wrap returns h answering only the requests Allowed lets through; the
// others get 403 (a missing or wrong token, or a peer on another machine)
// or 421 (a Host that is not loopback), with a one-line reason.
func Wrap(h http.Handler, token string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if Allowed(r, token) {
			h.ServeHTTP(w, r)
			return
		}
		Refuse(w, r, token)
	})
}

// Refuse answers a request Allowed refused.
func Refuse(w http.ResponseWriter, r *http.Request, token string) {
	switch {
	case token != "":
		http.Error(w, "agentctx: a valid token is required ("+TokenHeader+" or Authorization: Bearer)", http.StatusForbidden)
	case !LoopbackPeer(r):
		http.Error(w, "agentctx: this endpoint answers requests from this machine only; set a token (--token or AGENTCTX_TOKEN) to serve others", http.StatusForbidden)
	default:
		http.Error(w, "agentctx: this endpoint answers requests to a loopback address only (localhost, 127.0.0.1); set a token to serve others", http.StatusMisdirectedRequest)
	}
}
