// Package scram is the server side of SCRAM-SHA-256 (RFC 5802, RFC 7677) as
// PostgreSQL speaks it, including SCRAM-SHA-256-PLUS with the
// tls-server-end-point channel binding (RFC 5929), and the password verifiers
// PostgreSQL stores in place of passwords.
//
// It is a leaf package (standard library and x/text only) so that the session,
// which creates verifiers for CREATE USER, and the wire server, which checks
// them at login, can share it.
package scram

import (
	"bytes"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Mechanism names, as the server advertises them in AuthenticationSASL.
const (
	SHA256     = "SCRAM-SHA-256"
	SHA256Plus = "SCRAM-SHA-256-PLUS"
)

// Iterations is the PBKDF2 iteration count of new verifiers: PostgreSQL's
// default (scram_iterations) and RFC 7677's minimum.
const Iterations = 4096

// saltLen is the length of a new verifier's random salt, as PostgreSQL's.
const saltLen = 16

// ErrMalformed is a SCRAM message that does not follow the grammar, or a client
// that negotiated channel binding inconsistently: a protocol violation.
var ErrMalformed = errors.New("malformed SCRAM message")

// ErrAuthFailed is a proof that does not match the verifier: a wrong password.
var ErrAuthFailed = errors.New("SCRAM authentication failed")

// Verifier is what the server keeps of a password (RFC 5802 section 3): the
// salt and iteration count given to PBKDF2, StoredKey = H(HMAC(SaltedPassword,
// "Client Key")) and ServerKey = HMAC(SaltedPassword, "Server Key"). Neither key
// lets anyone log in without a proof computed from the password itself.
type Verifier struct {
	Iterations int
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
}

// NewVerifier returns the verifier of password with a fresh random salt and
// Iterations rounds. The password is normalised with SASLprep first, as
// PostgreSQL and its clients do.
func NewVerifier(password string) (Verifier, error) {
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return Verifier{}, err
	}
	return verifierFor(password, salt, Iterations)
}

func verifierFor(password string, salt []byte, iterations int) (Verifier, error) {
	salted, err := pbkdf2.Key(sha256.New, normalize(password), salt, iterations, sha256.Size)
	if err != nil {
		return Verifier{}, err
	}
	clientKey := hmacSum(salted, "Client Key")
	stored := sha256.Sum256(clientKey)
	return Verifier{
		Iterations: iterations,
		Salt:       salt,
		StoredKey:  stored[:],
		ServerKey:  hmacSum(salted, "Server Key"),
	}, nil
}

// String formats v as PostgreSQL stores it in pg_authid.rolpassword:
// SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>, base64.
func (v Verifier) String() string {
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("%s$%d:%s$%s:%s", SHA256, v.Iterations, b64(v.Salt), b64(v.StoredKey), b64(v.ServerKey))
}

// ParseVerifier reads a verifier in the form String writes.
func ParseVerifier(s string) (Verifier, error) {
	bad := fmt.Errorf("not a SCRAM-SHA-256 verifier")
	mech, rest, ok := strings.Cut(s, "$")
	if !ok || mech != SHA256 {
		return Verifier{}, bad
	}
	params, keys, ok := strings.Cut(rest, "$")
	if !ok {
		return Verifier{}, bad
	}
	iter, salt64, ok1 := strings.Cut(params, ":")
	stored64, server64, ok2 := strings.Cut(keys, ":")
	if !ok1 || !ok2 {
		return Verifier{}, bad
	}
	var v Verifier
	var err error
	if v.Iterations, err = strconv.Atoi(iter); err != nil || v.Iterations < 1 {
		return Verifier{}, bad
	}
	dec := base64.StdEncoding.DecodeString
	if v.Salt, err = dec(salt64); err != nil || len(v.Salt) == 0 {
		return Verifier{}, bad
	}
	if v.StoredKey, err = dec(stored64); err != nil || len(v.StoredKey) != sha256.Size {
		return Verifier{}, bad
	}
	if v.ServerKey, err = dec(server64); err != nil || len(v.ServerKey) != sha256.Size {
		return Verifier{}, bad
	}
	return v, nil
}

// CheckPassword reports whether password is the one v was made from (the
// "password" authentication method: the client sends it in clear text).
func (v Verifier) CheckPassword(password string) bool {
	w, err := verifierFor(password, v.Salt, v.Iterations)
	if err != nil {
		return false
	}
	return subtle.ConstantTimeCompare(w.StoredKey, v.StoredKey)&subtle.ConstantTimeCompare(w.ServerKey, v.ServerKey) == 1
}

// MockVerifier returns a verifier for a user that does not exist, so that a
// login attempt for it goes through the same exchange as for a real user and
// fails only at the proof, as in PostgreSQL. It is derived from secret and the
// user name, so the salt a prober sees for a name does not change between
// attempts.
func MockVerifier(secret []byte, user string) Verifier {
	return Verifier{
		Iterations: Iterations,
		Salt:       hmacSum(secret, "salt:"+user)[:saltLen],
		StoredKey:  hmacSum(secret, "stored:"+user),
		ServerKey:  hmacSum(secret, "server:"+user),
	}
}

func hmacSum(key []byte, msg string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

// normalize applies SASLprep (RFC 4013) to a password, as PostgreSQL and
// libpq do before hashing it: non-ASCII spaces become spaces, characters
// "commonly mapped to nothing" go, and the result is NFKC-normalised. A
// password SASLprep rejects (control or private-use characters, invalid UTF-8)
// is used as it is, which is PostgreSQL's rule too. (The bidirectional-text
// and unassigned-code-point checks are left out: such passwords are hashed
// after mapping rather than as they are.) Printable ASCII is unchanged.
func normalize(password string) string {
	ascii := true
	for i := 0; i < len(password); i++ {
		if c := password[i]; c < 0x20 || c > 0x7e {
			ascii = false
			break
		}
	}
	if ascii || !utf8.ValidString(password) {
		return password
	}
	mapped := make([]rune, 0, len(password))
	for _, r := range password {
		switch {
		case mappedToNothing(r):
		case r != ' ' && unicode.Is(unicode.Zs, r):
			mapped = append(mapped, ' ')
		default:
			mapped = append(mapped, r)
		}
	}
	out := norm.NFKC.String(string(mapped))
	for _, r := range out {
		if prohibited(r) {
			return password
		}
	}
	return out
}

// mappedToNothing is RFC 3454's table B.1.
func mappedToNothing(r rune) bool {
	switch {
	case r == 0x00AD, r == 0x034F, r == 0x1806, r >= 0x180B && r <= 0x180D, r >= 0x200B && r <= 0x200D,
		r == 0x2060, r >= 0xFE00 && r <= 0xFE0F, r == 0xFEFF:
		return true
	}
	return false
}

// prohibited approximates SASLprep's prohibited output (RFC 3454 tables C.2
// to C.9): control characters, private use, non-characters, surrogates and the
// formatting characters.
func prohibited(r rune) bool {
	switch {
	case unicode.IsControl(r), unicode.Is(unicode.Co, r), unicode.Is(unicode.Cs, r):
		return true
	case r >= 0xFDD0 && r <= 0xFDEF, r&0xFFFE == 0xFFFE:
		return true
	case r >= 0x2FF0 && r <= 0x2FFB, r >= 0x200E && r <= 0x200F, r >= 0x202A && r <= 0x202E,
		r >= 0x206A && r <= 0x206F, r == 0x0340, r == 0x0341, r >= 0xFFF9 && r <= 0xFFFD, r == 0xE0001,
		r >= 0xE0020 && r <= 0xE007F:
		return true
	}
	return false
}

// EndPointBinding returns the tls-server-end-point channel binding data of a
// server certificate (RFC 5929 section 4.1): its hash by the hash function of
// its signature algorithm, SHA-256 for MD5 and SHA-1. ok is false for
// signature algorithms the binding is undefined for (Ed25519).
func EndPointBinding(cert *x509.Certificate) (data []byte, ok bool) {
	var h hash.Hash
	switch cert.SignatureAlgorithm {
	case x509.MD5WithRSA, x509.SHA1WithRSA, x509.ECDSAWithSHA1,
		x509.SHA256WithRSA, x509.SHA256WithRSAPSS, x509.ECDSAWithSHA256:
		h = sha256.New()
	case x509.SHA384WithRSA, x509.SHA384WithRSAPSS, x509.ECDSAWithSHA384:
		h = sha512.New384()
	case x509.SHA512WithRSA, x509.SHA512WithRSAPSS, x509.ECDSAWithSHA512:
		h = sha512.New()
	default:
		return nil, false
	}
	h.Write(cert.Raw)
	return h.Sum(nil), true
}

// Server is one SCRAM exchange, server side: First answers the client-first
// message, Final checks the client-final message's proof.
type Server struct {
	v         Verifier
	mechanism string
	// binding is the tls-server-end-point data of the connection, nil when it is
	// not over TLS (or the certificate allows no binding): then the server does
	// not offer SHA256Plus.
	binding []byte

	gs2Header       string // as the client sent it, e.g. "n,,"
	clientFirstBare string
	serverFirst     string
	nonce           string // client nonce + server nonce
	done            bool

	serverNonce string // set by tests to replay RFC 7677's example; else random
}

// NewServer starts an exchange in which the client chose mechanism (SHA256 or
// SHA256Plus) to prove it knows the password of v. binding is the channel's
// tls-server-end-point data, nil if the server offered no SHA256Plus.
func NewServer(v Verifier, mechanism string, binding []byte) (*Server, error) {
	switch {
	case mechanism == SHA256:
	case mechanism == SHA256Plus && binding != nil:
	default:
		return nil, fmt.Errorf("%w: unsupported mechanism %q", ErrMalformed, mechanism)
	}
	return &Server{v: v, mechanism: mechanism, binding: binding}, nil
}

// First reads the client-first message and returns the server-first message.
func (s *Server) First(clientFirst []byte) ([]byte, error) {
	if s.serverFirst != "" {
		return nil, fmt.Errorf("%w: client-first message sent twice", ErrMalformed)
	}
	msg := string(clientFirst)
	// gs2-header = gs2-cbind-flag "," [authzid] ","
	flag, rest, ok := strings.Cut(msg, ",")
	if !ok {
		return nil, fmt.Errorf("%w: no GS2 header", ErrMalformed)
	}
	switch {
	case flag == "n":
		if s.mechanism == SHA256Plus {
			return nil, fmt.Errorf("%w: channel binding mechanism chosen without binding", ErrMalformed)
		}
	case flag == "y":
		// The client could bind but believes the server cannot. If the server
		// offered binding, someone removed it from the offer: refuse.
		if s.mechanism == SHA256Plus || s.binding != nil {
			return nil, fmt.Errorf("%w: channel binding offered but not used (downgrade)", ErrMalformed)
		}
	case flag == "p=tls-server-end-point":
		if s.mechanism != SHA256Plus {
			return nil, fmt.Errorf("%w: channel binding requested without %s", ErrMalformed, SHA256Plus)
		}
	default:
		return nil, fmt.Errorf("%w: unsupported channel binding flag %q", ErrMalformed, flag)
	}
	authzid, bare, ok := strings.Cut(rest, ",")
	if !ok {
		return nil, fmt.Errorf("%w: truncated GS2 header", ErrMalformed)
	}
	if authzid != "" {
		return nil, fmt.Errorf("%w: authorization identities are not supported", ErrMalformed)
	}
	// client-first-message-bare = [reserved-mext ","] username "," nonce ["," extensions]
	attrs := strings.Split(bare, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "n=") || !strings.HasPrefix(attrs[1], "r=") {
		return nil, fmt.Errorf("%w: client-first message wants n= then r=", ErrMalformed)
	}
	// PostgreSQL ignores the user name here (the startup packet named the user).
	clientNonce := attrs[1][2:]
	if !printable(clientNonce) {
		return nil, fmt.Errorf("%w: bad client nonce", ErrMalformed)
	}
	if s.serverNonce == "" {
		var raw [18]byte
		if _, err := rand.Read(raw[:]); err != nil {
			return nil, err
		}
		s.serverNonce = base64.StdEncoding.EncodeToString(raw[:])
	}
	s.gs2Header = flag + "," + authzid + ","
	s.clientFirstBare = bare
	s.nonce = clientNonce + s.serverNonce
	s.serverFirst = fmt.Sprintf("r=%s,s=%s,i=%d", s.nonce, base64.StdEncoding.EncodeToString(s.v.Salt), s.v.Iterations)
	return []byte(s.serverFirst), nil
}

// Final reads the client-final message and, if its proof is right, returns the
// server-final message (the server's signature, which proves to the client that
// the server knew the verifier). A wrong proof is ErrAuthFailed.
func (s *Server) Final(clientFinal []byte) ([]byte, error) {
	if s.serverFirst == "" || s.done {
		return nil, fmt.Errorf("%w: client-final message out of order", ErrMalformed)
	}
	s.done = true
	msg := string(clientFinal)
	// client-final-message = channel-binding "," nonce ["," extensions] "," proof
	i := strings.LastIndex(msg, ",p=")
	if i < 0 {
		return nil, fmt.Errorf("%w: no proof", ErrMalformed)
	}
	withoutProof, proof64 := msg[:i], msg[i+len(",p="):]
	attrs := strings.Split(withoutProof, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "c=") || !strings.HasPrefix(attrs[1], "r=") {
		return nil, fmt.Errorf("%w: client-final message wants c= then r=", ErrMalformed)
	}
	cbind, err := base64.StdEncoding.DecodeString(attrs[0][2:])
	if err != nil {
		return nil, fmt.Errorf("%w: bad channel binding encoding", ErrMalformed)
	}
	want := []byte(s.gs2Header)
	if s.mechanism == SHA256Plus {
		want = append(want, s.binding...)
	}
	if !bytes.Equal(cbind, want) {
		// A wrong binding is a man in the middle (or a client bug): the
		// authentication fails, as PostgreSQL's "SCRAM channel binding check failed".
		return nil, fmt.Errorf("%w: channel binding does not match", ErrAuthFailed)
	}
	if attrs[1][2:] != s.nonce {
		return nil, fmt.Errorf("%w: nonce does not match", ErrMalformed)
	}
	proof, err := base64.StdEncoding.DecodeString(proof64)
	if err != nil || len(proof) != sha256.Size {
		return nil, fmt.Errorf("%w: bad proof encoding", ErrMalformed)
	}
	authMessage := s.clientFirstBare + "," + s.serverFirst + "," + withoutProof
	clientSig := hmacSum(s.v.StoredKey, authMessage)
	clientKey := make([]byte, sha256.Size)
	for k := range clientKey {
		clientKey[k] = proof[k] ^ clientSig[k]
	}
	stored := sha256.Sum256(clientKey)
	if subtle.ConstantTimeCompare(stored[:], s.v.StoredKey) != 1 {
		return nil, ErrAuthFailed
	}
	serverSig := hmacSum(s.v.ServerKey, authMessage)
	return []byte("v=" + base64.StdEncoding.EncodeToString(serverSig)), nil
}

// printable reports whether s is a non-empty run of printable ASCII other than
// ',' (RFC 5802's nonce characters).
func printable(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7e || c == ',' {
			return false
		}
	}
	return true
}
