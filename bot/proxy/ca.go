package proxy

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// CA file names in the data dir. The key is the proxy's alone: the
// sandbox hides the data dir, so an agent can neither read it nor mint
// certificates of its own.
const (
	CACertFile = "proxy-ca.pem"
	CAKeyFile  = "proxy-ca.key"
)

// caValidity is how long a CA made by LoadCA is valid; leafValidity how
// long a certificate it mints for one host is.
const (
	caValidity   = 10 * 365 * 24 * time.Hour
	leafValidity = 7 * 24 * time.Hour
	maxLeaves    = 1024
)

// CA is the proxy's local certificate authority: it mints the
// certificates the proxy shows a client when it opens TLS to inspect a
// narrowed door. Clients trust it through CertFile (SSL_CERT_FILE and the
// like; see docs/network.md).
type CA struct {
	// CertFile is the CA certificate (PEM) a client must trust.
	CertFile string
	cert     *x509.Certificate
	key      crypto.Signer
	pem      []byte

	mu     sync.Mutex
	leaves map[string]*tls.Certificate
}

// LoadCA loads the CA kept in dir, making it the first time: the key is
// written with mode 0600 and refused when anyone but its owner may read
// it.
func LoadCA(dir string) (*CA, error) {
	certPath, keyPath := filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile)
	keyPEM, err := os.ReadFile(keyPath)
	if errors.Is(err, os.ErrNotExist) {
		if err := makeCA(dir, certPath, keyPath); err != nil {
			return nil, err
		}
		keyPEM, err = os.ReadFile(keyPath)
	}
	if err != nil {
		return nil, fmt.Errorf("proxy CA key: %w", err)
	}
	if fi, err := os.Stat(keyPath); err != nil {
		return nil, fmt.Errorf("proxy CA key: %w", err)
	} else if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("proxy CA key %s has mode %v: anyone but its owner may read it (chmod 600 it, or delete it and its certificate to make a new CA)", keyPath, fi.Mode().Perm())
	}
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, fmt.Errorf("proxy CA certificate: %w", err)
	}
	return parseCA(certPath, certPEM, keyPEM)
}

func makeCA(dir, certPath, keyPath string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("proxy CA: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("proxy CA key: %w", err)
	}
	now := time.Now()
	host, _ := os.Hostname()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "signoff proxy local CA (" + host + ")", Organization: []string{"signoff"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(caValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return fmt.Errorf("proxy CA certificate: %w", err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("proxy CA key: %w", err)
	}
	// The key first, with O_EXCL: two proxies starting at once make one CA.
	f, err := os.OpenFile(keyPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("proxy CA key: %w", err)
	}
	// The certificate is written before the key is complete, so a reader
	// that sees the key finds its certificate.
	if err := writeFileAtomic(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		f.Close()
		os.Remove(keyPath)
		return fmt.Errorf("proxy CA certificate: %w", err)
	}
	if _, err := f.Write(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})); err != nil {
		f.Close()
		os.Remove(keyPath)
		return fmt.Errorf("proxy CA key: %w", err)
	}
	return f.Close()
}

func parseCA(certPath string, certPEM, keyPEM []byte) (*CA, error) {
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || cb.Type != "CERTIFICATE" || kb == nil {
		return nil, fmt.Errorf("proxy CA in %s: not a PEM certificate and key", filepath.Dir(certPath))
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("proxy CA certificate: %w", err)
	}
	k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("proxy CA key: %w", err)
	}
	key, ok := k.(crypto.Signer)
	if !ok || !publicKeysEqual(key.Public(), cert.PublicKey) {
		return nil, fmt.Errorf("proxy CA in %s: the key does not belong to the certificate", filepath.Dir(certPath))
	}
	if !cert.IsCA || time.Now().After(cert.NotAfter) {
		return nil, fmt.Errorf("proxy CA certificate %s is not a valid CA (expired %v?); delete it and its key to make a new one", certPath, cert.NotAfter.Format(time.DateOnly))
	}
	return &CA{CertFile: certPath, cert: cert, key: key, pem: certPEM, leaves: map[string]*tls.Certificate{}}, nil
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	ea, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && ea.Equal(b)
}

// PEM is the CA certificate.
func (ca *CA) PEM() []byte { return bytes.Clone(ca.pem) }

// Pool is a certificate pool holding the CA only.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// systemBundles are where Linux distributions keep their root bundle.
var systemBundles = []string{
	"/etc/ssl/certs/ca-certificates.crt",                // Debian, Ubuntu, Alpine
	"/etc/pki/tls/certs/ca-bundle.crt",                  // Fedora, RHEL
	"/etc/ssl/ca-bundle.pem",                            // openSUSE
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", // RHEL
	"/etc/ssl/cert.pem",                                 // Alpine, macOS
}

// WriteBundle writes to path the system's root certificates followed by
// the CA: the file SSL_CERT_FILE, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE and
// GIT_SSL_CAINFO name inside the sandbox, so a client trusts both the
// public sites it reaches through open tunnels and the proxy's inspected
// doors. Without a system bundle it holds the CA alone.
func (ca *CA) WriteBundle(path string) error {
	var b bytes.Buffer
	for _, f := range systemBundles {
		if data, err := os.ReadFile(f); err == nil && len(data) > 0 {
			b.Write(data)
			if !bytes.HasSuffix(data, []byte("\n")) {
				b.WriteByte('\n')
			}
			break
		}
	}
	b.WriteString("# signoff proxy local CA\n")
	b.Write(ca.pem)
	if err := writeFileAtomic(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write the CA bundle: %w", err)
	}
	return nil
}

func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Leaf is the certificate the proxy shows for host, minted on first use
// and kept until it is within a day of expiring.
func (ca *CA) Leaf(host string) (*tls.Certificate, error) {
	now := time.Now()
	ca.mu.Lock()
	c := ca.leaves[host]
	ca.mu.Unlock()
	if c != nil && now.Add(24*time.Hour).Before(c.Leaf.NotAfter) {
		return c, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	notAfter := now.Add(leafValidity)
	if notAfter.After(ca.cert.NotAfter) {
		notAfter = ca.cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: host, Organization: []string{"signoff proxy (inspected door)"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, fmt.Errorf("mint a certificate for %s: %w", host, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	c = &tls.Certificate{Certificate: [][]byte{der, ca.cert.Raw}, PrivateKey: key, Leaf: leaf}
	ca.mu.Lock()
	if len(ca.leaves) >= maxLeaves {
		clear(ca.leaves)
	}
	ca.leaves[host] = c
	ca.mu.Unlock()
	return c, nil
}

func serial() *big.Int {
	var b [16]byte
	rand.Read(b[:])
	h := sha256.Sum256(b[:])
	return new(big.Int).SetBytes(h[:16])
}

// TrustEnv is the environment that makes the usual clients trust bundle
// (a file written by WriteBundle): OpenSSL and Go (SSL_CERT_FILE), Node
// (NODE_EXTRA_CA_CERTS, added to its own roots), Python requests
// (REQUESTS_CA_BUNDLE), curl (CURL_CA_BUNDLE) and git (GIT_SSL_CAINFO).
func TrustEnv(bundle string) []string {
	return []string{
		"SSL_CERT_FILE=" + bundle,
		"NODE_EXTRA_CA_CERTS=" + bundle,
		"REQUESTS_CA_BUNDLE=" + bundle,
		"CURL_CA_BUNDLE=" + bundle,
		"GIT_SSL_CAINFO=" + bundle,
	}
}
