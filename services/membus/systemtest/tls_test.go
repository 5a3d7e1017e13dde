package systemtest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/membus/membus/pkg/bus"
)

// writeTLSPair makes a CA and a server certificate it signs for 127.0.0.1 and localhost, and
// writes ca.pem, cert.pem and key.pem into dir.
func writeTLSPair(t *testing.T, dir string) (caFile, certFile, keyFile string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "membus test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "membus"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return write("ca.pem", "CERTIFICATE", caDER), write("cert.pem", "CERTIFICATE", leafDER), write("key.pem", "EC PRIVATE KEY", keyDER)
}

// TestTLS: `membus up` with tls_cert and tls_key (a pair this test signs with its own CA)
// serves HTTPS and a TLS-only embedded NATS server. A client that trusts the CA gets in —
// HTTP round trip, the bus with the token, the CLI with --tls-ca; plain HTTP and plain NATS do
// not; and a CLI without the CA is told the certificate is unknown.
func TestTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts membus up")
	}
	dir := t.TempDir()
	caFile, certFile, keyFile := writeTLSPair(t, t.TempDir())
	// No tls_ca for membus up itself: it trusts the certificate it serves.
	p := startUp(t, dir, "--tls-cert", certFile, "--tls-key", keyFile)
	p.waitReady()
	if !strings.Contains(p.stdout.String(), "HTTP API:  https://"+p.httpAddr) {
		t.Errorf("the ready lines do not name the HTTPS API:\n%s", p.stdout.String())
	}
	// No tls_ca: the plugin is told to trust the served certificate itself.
	if !strings.Contains(p.stdout.String(), "--nats-tls-ca "+certFile+" --api-key ") {
		t.Errorf("the plugin's setup line does not name the certificate to trust (%s):\n%s", certFile, p.stdout.String())
	}

	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	base := "https://" + p.httpAddr

	// HTTPS answers; the dev key round-trips a message and a synchronous commit.
	key := p.devKey()
	if key == "" {
		t.Fatalf("no dev API key printed:\n%s", p.stdout.String())
	}
	do := func(method, path, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s over HTTPS: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := do(http.MethodGet, "/readyz", ""); code != http.StatusOK {
		t.Fatalf("GET /readyz over HTTPS: %d %s", code, body)
	}
	if code, body := do(http.MethodPost, "/v1/sessions/tls/messages", `{"messages":[{"role":"user","content":"My favourite city is Porto."}]}`); code/100 != 2 {
		t.Fatalf("POST messages over HTTPS: %d %s", code, body)
	}
	if code, body := do(http.MethodPost, "/v1/sessions/tls/commit", `{"wait":true}`); code/100 != 2 || !strings.Contains(body, `"completed"`) {
		t.Fatalf("commit over HTTPS: %d %s", code, body)
	}

	// Plain HTTP on the TLS port is refused (Go's server answers it 400).
	if resp, err := http.Get("http://" + p.httpAddr + "/healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("plain HTTP to the TLS port: %d, want 400", resp.StatusCode)
		}
	}

	// The bus: TLS with the CA gets in; without TLS the server refuses.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p.connectBus(ctx, "tls-test", nats.Secure(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}))
	if nc, err := bus.Connect(ctx, "nats://"+p.natsAddr, p.natsToken(), "tls-test-plain", nats.MaxReconnects(0),
		nats.Secure(&tls.Config{MinVersion: tls.VersionTLS12})); err == nil {
		nc.Close()
		t.Error("a client that does not trust the CA connected to the TLS-only NATS server")
	} else if !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a client without the CA: %v, want a certificate error", err)
	}

	// The CLI connects over TLS with --tls-ca, and says what is wrong without it.
	args := []string{"dlq", "list", "--data-dir", dir, "--nats-listen", p.natsAddr}
	if out, errOut, code := runCLI(t, append(args, "--tls-ca", caFile)...); code != 0 {
		t.Errorf("membus dlq list --tls-ca: exit %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code := runCLI(t, args...); code == 0 || !strings.Contains(errOut, "certificate") {
		t.Errorf("membus dlq list without --tls-ca: exit %d, stderr %q: want a certificate error", code, errOut)
	}
	p.stop()
}
