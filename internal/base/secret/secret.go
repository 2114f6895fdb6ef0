// Package secret keeps secrets out of what agentctx prints: database URLs
// without their passwords, text without the credentials it may echo.
package secret

import (
	"net/url"
	"strings"
)

// Mask is what stands in for a secret.
const Mask = "xxxxx"

// sensitive reports whether a URL query parameter or key=value field
// holds a secret.
func sensitive(key string) bool {
	switch strings.ToLower(key) {
	case "password", "sslpassword", "pass", "pwd", "secret", "token", "api_key", "apikey", "key", "access_token", "auth":
		return true
	}
	return false
}

// URL returns a database URL or libpq key=value string with every secret
// masked: the password of the user info, and the query parameters or
// fields that hold one (password=, sslpassword=, token=, ...). What cannot
// be parsed is reduced to the fields known to be harmless.
func URL(s string) string {
	if u, err := url.Parse(s); err == nil && u.Scheme != "" {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), Mask)
		}
		if u.RawQuery != "" {
			q := u.Query()
			for k := range q {
				if sensitive(k) {
					q.Set(k, Mask)
				}
			}
			u.RawQuery = q.Encode()
		}
		return u.String()
	}
	var keep []string
	for _, f := range strings.Fields(s) {
		k, _, ok := strings.Cut(f, "=")
		switch {
		case !ok:
		case sensitive(k):
			keep = append(keep, k+"="+Mask)
		case k == "host" || k == "port" || k == "dbname" || k == "user" || k == "sslmode":
			keep = append(keep, f)
		}
	}
	return strings.Join(keep, " ")
}

// Scrub returns text with every occurrence of the given secrets (API keys,
// bearer tokens) replaced by Mask; empty and very short secrets, which
// would mask ordinary words, are left alone.
func Scrub(text string, secrets ...string) string {
	for _, s := range secrets {
		s = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s), "Bearer "))
		if len(s) >= 8 {
			text = strings.ReplaceAll(text, s, Mask)
		}
	}
	return text
}
