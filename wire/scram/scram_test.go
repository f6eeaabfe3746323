package scram

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

// The example exchange of RFC 7677 section 3: user "user", password "pencil".
const (
	rfcSalt        = "W22ZaJ0SNY7soEsUEjb6gQ=="
	rfcClientFirst = "n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
	rfcServerNonce = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
	rfcServerFirst = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
	rfcClientFinal = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
	rfcServerFinal = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
)

func rfcVerifier(t *testing.T, password string) Verifier {
	t.Helper()
	salt, _ := base64.StdEncoding.DecodeString(rfcSalt)
	v, err := verifierFor(password, salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestRFC7677Exchange(t *testing.T) {
	s, err := NewServer(rfcVerifier(t, "pencil"), SHA256, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.serverNonce = rfcServerNonce
	first, err := s.First([]byte(rfcClientFirst))
	if err != nil || string(first) != rfcServerFirst {
		t.Fatalf("server-first %q, %v; want %q", first, err, rfcServerFirst)
	}
	final, err := s.Final([]byte(rfcClientFinal))
	if err != nil || string(final) != rfcServerFinal {
		t.Fatalf("server-final %q, %v; want %q", final, err, rfcServerFinal)
	}
}

func TestWrongPasswordFailsAtProof(t *testing.T) {
	s, _ := NewServer(rfcVerifier(t, "not pencil"), SHA256, nil)
	s.serverNonce = rfcServerNonce
	if _, err := s.First([]byte(rfcClientFirst)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Final([]byte(rfcClientFinal)); !errors.Is(err, ErrAuthFailed) {
		t.Fatalf("Final = %v, want ErrAuthFailed", err)
	}
}

func TestVerifierText(t *testing.T) {
	v, err := NewVerifier("correct horse")
	if err != nil {
		t.Fatal(err)
	}
	text := v.String()
	if !strings.HasPrefix(text, "SCRAM-SHA-256$4096:") || strings.Contains(text, "correct") {
		t.Fatalf("verifier %q", text)
	}
	w, err := ParseVerifier(text)
	if err != nil || w.String() != text {
		t.Fatalf("ParseVerifier(%q) = %v, %v", text, w, err)
	}
	if !w.CheckPassword("correct horse") || w.CheckPassword("correct horse ") || w.CheckPassword("") {
		t.Error("CheckPassword")
	}
	// PostgreSQL's own verifier of "pencil" with the RFC's salt reads the same.
	if got := rfcVerifier(t, "pencil").String(); !strings.HasPrefix(got, "SCRAM-SHA-256$4096:"+rfcSalt+"$") {
		t.Errorf("verifier %q", got)
	}
	for _, bad := range []string{"", "md5abc", "SCRAM-SHA-256$4096:c2FsdA==", "SCRAM-SHA-256$x:c2FsdA==$a:b",
		"SCRAM-SHA-256$4096:c2FsdA==$AAAA:AAAA", "SCRAM-SHA-256$0:" + rfcSalt + "$" + strings.Repeat("A", 43) + "=:" + strings.Repeat("A", 43) + "="} {
		if _, err := ParseVerifier(bad); err == nil {
			t.Errorf("ParseVerifier(%q) accepted", bad)
		}
	}
}

func TestMockVerifierIsStableAndUseless(t *testing.T) {
	a, b := MockVerifier([]byte("k"), "eve"), MockVerifier([]byte("k"), "eve")
	if a.String() != b.String() {
		t.Error("mock verifier changes between attempts")
	}
	if MockVerifier([]byte("k"), "mallory").String() == a.String() {
		t.Error("mock verifiers of two users are equal")
	}
	if a.CheckPassword("") || a.CheckPassword("eve") {
		t.Error("a mock verifier accepted a password")
	}
}

func TestNonASCIIPasswordsNormalised(t *testing.T) {
	// U+2168 ROMAN NUMERAL NINE becomes "IX" under NFKC, as clients normalise it.
	v, err := NewVerifier("\u2168")
	if err != nil {
		t.Fatal(err)
	}
	if !v.CheckPassword("IX") || !v.CheckPassword("\u2168") {
		t.Error("normalised forms differ")
	}
}

func TestMalformedMessages(t *testing.T) {
	binding := []byte("certificate hash")
	for _, tc := range []struct {
		name, mech string
		binding    []byte
		first      string
		final      string // checked when first succeeds
		wantFirst  error
		wantFinal  error
	}{
		{name: "empty", mech: SHA256, first: "", wantFirst: ErrMalformed},
		{name: "no bare", mech: SHA256, first: "n,,", wantFirst: ErrMalformed},
		{name: "authzid", mech: SHA256, first: "n,a=admin,n=,r=abc", wantFirst: ErrMalformed},
		{name: "bad flag", mech: SHA256, first: "x,,n=,r=abc", wantFirst: ErrMalformed},
		{name: "nonce with comma", mech: SHA256, first: "n,,n=,r=", wantFirst: ErrMalformed},
		{name: "downgrade", mech: SHA256, binding: binding, first: "y,,n=,r=abc", wantFirst: ErrMalformed},
		{name: "binding without plus", mech: SHA256, first: "p=tls-server-end-point,,n=,r=abc", wantFirst: ErrMalformed},
		{name: "plus without binding", mech: SHA256Plus, binding: binding, first: "n,,n=,r=abc", wantFirst: ErrMalformed},
		{name: "no proof", mech: SHA256, first: "n,,n=,r=abc", final: "c=biws,r=abc", wantFinal: ErrMalformed},
		{name: "wrong nonce", mech: SHA256, first: "n,,n=,r=abc", final: "c=biws,r=abc,p=" + strings.Repeat("A", 43) + "=", wantFinal: ErrMalformed},
		{name: "wrong binding", mech: SHA256Plus, binding: binding, first: "p=tls-server-end-point,,n=,r=abc",
			final: "c=" + base64.StdEncoding.EncodeToString([]byte("p=tls-server-end-point,,other hash")) + ",r=abc,p=x", wantFinal: ErrAuthFailed},
		{name: "short proof", mech: SHA256, first: "n,,n=,r=abc", final: "c=biws,r=abcSN,p=AAAA", wantFinal: ErrMalformed},
	} {
		s, err := NewServer(rfcVerifier(t, "pencil"), tc.mech, tc.binding)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		s.serverNonce = "SN"
		_, err = s.First([]byte(tc.first))
		if !errors.Is(err, tc.wantFirst) || (tc.wantFirst == nil) != (err == nil) {
			t.Errorf("%s: First = %v, want %v", tc.name, err, tc.wantFirst)
			continue
		}
		if err != nil {
			continue
		}
		if _, err := s.Final([]byte(tc.final)); !errors.Is(err, tc.wantFinal) {
			t.Errorf("%s: Final = %v, want %v", tc.name, err, tc.wantFinal)
		}
	}
	if _, err := NewServer(Verifier{}, SHA256Plus, nil); !errors.Is(err, ErrMalformed) {
		t.Errorf("PLUS without a binding: %v", err)
	}
	if _, err := NewServer(Verifier{}, "SCRAM-SHA-1", nil); !errors.Is(err, ErrMalformed) {
		t.Errorf("SCRAM-SHA-1: %v", err)
	}
}
