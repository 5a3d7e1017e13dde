package app

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/membus/membus/pkg/config"
)

// ServerTLS is the certificate the HTTP listeners and the embedded NATS server serve
// (tls_cert, tls_key), nil when TLS is off.
func ServerTLS(cfg config.Config) (*tls.Config, error) {
	if cfg.TLSCert == "" {
		return nil, nil
	}
	pair, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
	if err != nil {
		return nil, fmt.Errorf("MEMBUS_TLS_CERT / MEMBUS_TLS_KEY (%s, %s): %w: give a PEM certificate chain and its private key", cfg.TLSCert, cfg.TLSKey, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
}

// NATSClientTLS is the TLS a NATS client of this process uses: the tls_ca bundle (a CA, or the
// served certificate itself: Go trusts a certificate found in the pool); else, when the server
// is this process's embedded one (no nats_url) serving tls_cert, that certificate; nil when
// neither is set (a TLS-only server is then reached with the system's roots).
func NATSClientTLS(cfg config.Config) (*tls.Config, error) {
	file, key := cfg.TLSCA, "MEMBUS_TLS_CA"
	if file == "" && cfg.NATSURL == "" && cfg.TLSCert != "" {
		file, key = cfg.TLSCert, "MEMBUS_TLS_CERT"
	}
	if file == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: %s holds no PEM certificate", key, file)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}
