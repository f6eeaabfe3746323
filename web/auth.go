package web

import (
	"context"
	"crypto/sha256"
	"mime"
	"net/http"
	"sync"

	"github.com/hummer-db/hummer/session"
	"github.com/hummer-db/hummer/wire/scram"
)

// userKey is the request context's key of the logged-in user.
type userKey struct{}

// userOf returns the user a request logged in as, "" when the endpoint asks
// no one to (on loopback).
func userOf(r *http.Request) string {
	u, _ := r.Context().Value(userKey{}).(string)
	return u
}

// auth wraps h: when the server requires it (Config.Auth), a request must
// carry HTTP basic credentials of a catalog user whose SCRAM verifier takes the
// password: the users and passwords of the PostgreSQL port. A user without a
// password cannot log in.
func (s *Server) auth(h http.HandlerFunc) http.HandlerFunc {
	if !s.cfg.Auth {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request) {
		eng := s.engine(w)
		if eng == nil {
			return
		}
		user, password, ok := r.BasicAuth()
		if !ok || !s.checkPassword(eng, user, password) {
			w.Header().Set("WWW-Authenticate", `Basic realm="hummer", charset="UTF-8"`)
			httpError(w, http.StatusUnauthorized, "log in as a user of the PostgreSQL port")
			return
		}
		h(w, r.WithContext(context.WithValue(r.Context(), userKey{}, user)))
	}
}

// passwordCache remembers passwords a verifier took, by a hash of user,
// verifier and password, so that a dashboard polling every second does not pay
// SCRAM's 4096 rounds each time. A changed password changes the verifier, and
// so the key.
type passwordCache struct {
	mu sync.Mutex
	ok map[[32]byte]bool
}

func (s *Server) checkPassword(eng *session.Engine, user, password string) bool {
	u, found := eng.User(user)
	if !found || u.Verifier == "" {
		return false
	}
	key := sha256.Sum256([]byte(user + "\x00" + u.Verifier + "\x00" + password))
	s.passwords.mu.Lock()
	hit := s.passwords.ok[key]
	s.passwords.mu.Unlock()
	if hit {
		return true
	}
	v, err := scram.ParseVerifier(u.Verifier)
	if err != nil || !v.CheckPassword(password) {
		return false
	}
	s.passwords.mu.Lock()
	if s.passwords.ok == nil || len(s.passwords.ok) > 1000 {
		s.passwords.ok = map[[32]byte]bool{}
	}
	s.passwords.ok[key] = true
	s.passwords.mu.Unlock()
	return true
}

// sameOrigin wraps a handler that changes something (POST): it must come with
// a JSON body, which a browser sends cross-origin only after a CORS preflight
// that the server never grants, so another site's page cannot cancel a job in
// a logged-in browser.
func sameOrigin(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
			httpError(w, http.StatusUnsupportedMediaType, "send Content-Type: application/json")
			return
		}
		if o := r.Header.Get("Origin"); o != "" && o != "http://"+r.Host && o != "https://"+r.Host {
			httpError(w, http.StatusForbidden, "cross-origin request")
			return
		}
		h(w, r)
	}
}
