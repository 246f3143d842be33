//! TLS set-up as data and configuration, below everything that names it (plans, targets,
//! the protocols' registry entries): when a URL's connections speak TLS, the client's options
//! (`--ca`, `--insecure`, `--tls-version`, `--tls-resume`, `--client-cert`/`--client-key`) and
//! the rustls configuration made from them, and a built-in server's (`--tls`, `--cert`/`--key`,
//! or a certificate made at start; `--client-ca` to require clients' certificates).

use anyhow::{Context, Result, bail};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use std::path::PathBuf;
use std::sync::Arc;

/// When a URL's connections speak TLS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsStart {
    /// From the first byte (`https://`, `wss://`, `sios://`, `nsq+https://`).
    AtConnect,
    /// When the protocol's own handshake says so (nsqd's `tls_v1` after `IDENTIFY`).
    InHandshake,
    /// Inside QUIC's handshake (`h3://`): TLS 1.3 carried in QUIC's CRYPTO frames, not records.
    InQuic,
}

/// The TLS versions a client offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
pub enum TlsVersion {
    #[value(name = "1.2")]
    V12,
    #[value(name = "1.3")]
    V13,
}

/// The client's TLS options, shared by every command that generates load.
#[derive(Debug, Clone, Default, clap::Args, serde::Serialize)]
pub struct TlsArgs {
    /// TLS: offer only this version (default: 1.3 and 1.2; the server picks).
    #[arg(long, value_enum, value_name = "1.2|1.3")]
    pub tls_version: Option<TlsVersion>,
    /// TLS: trust the certificates in this PEM file (the server's own, or its CA), besides the
    /// system's (/etc/ssl/certs).
    #[arg(long, value_name = "FILE")]
    pub ca: Option<PathBuf>,
    /// TLS: accept any certificate for any name (still a real handshake and real records;
    /// only the check of who signed it is skipped).
    #[arg(long)]
    pub insecure: bool,
    /// TLS: resume sessions on reconnect (tickets or session ids, as the server offers); most
    /// useful with --no-keepalive. Default: every connection's handshake is a full one.
    #[arg(long)]
    pub tls_resume: bool,
    /// TLS: present this certificate chain (PEM) to a server that asks for one (mutual TLS);
    /// with --client-key.
    #[arg(long, value_name = "FILE", requires = "client_key")]
    pub client_cert: Option<PathBuf>,
    /// TLS: the private key (PEM) of --client-cert.
    #[arg(long, value_name = "FILE", requires = "client_cert")]
    pub client_key: Option<PathBuf>,
    /// Certificates trusted besides the files (DER): `compare` trusts the built-in servers'
    /// certificate it made.
    #[arg(skip)]
    #[serde(skip)]
    pub trust: Vec<Vec<u8>>,
}

/// What a client connection needs to start TLS with one target.
#[derive(Debug, Clone)]
pub struct ClientTls {
    pub config: Arc<rustls::ClientConfig>,
    /// The name checked in the certificate and sent as SNI (none for an IP address).
    pub name: ServerName<'static>,
    pub start: TlsStart,
    /// A protocol the server must agree to by ALPN (checked by the pre-flight handshake).
    pub alpn: Option<&'static [u8]>,
}

impl ClientTls {
    /// A session for the pre-flight's handshake: the same configuration, but it neither uses
    /// nor keeps session tickets, so the run's first connections are what they would be
    /// without it (it reads the server's tickets while it waits for the server's verdict on
    /// the handshake; kept, they made every connection of a `--tls-resume` run a resumed one).
    pub fn preflight_session(&self) -> Result<rustls::ClientConnection, rustls::Error> {
        let mut config = (*self.config).clone();
        config.resumption = rustls::client::Resumption::disabled();
        let mut conn = rustls::ClientConnection::new(Arc::new(config), self.name.clone())?;
        conn.set_buffer_limit(None);
        Ok(conn)
    }

    /// A new TLS client session for one connection.
    pub fn session(&self) -> Result<rustls::ClientConnection, rustls::Error> {
        let mut conn = rustls::ClientConnection::new(self.config.clone(), self.name.clone())?;
        // The connection machine drains what rustls holds after every call: no limit needed.
        conn.set_buffer_limit(None);
        Ok(conn)
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn versions(v: Option<TlsVersion>) -> Vec<&'static rustls::SupportedProtocolVersion> {
    match v {
        Some(TlsVersion::V12) => vec![&rustls::version::TLS12],
        Some(TlsVersion::V13) => vec![&rustls::version::TLS13],
        None => vec![&rustls::version::TLS13, &rustls::version::TLS12],
    }
}

/// Where Debian, Fedora and Alpine keep the system's trusted certificates.
const SYSTEM_ROOTS: [&str; 3] =
    ["/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem"];

/// The client configuration for one target: `alpn` is the protocol named in ALPN
/// (`http/1.1`), or none.
pub fn client_config(args: &TlsArgs, alpn: Option<&[u8]>) -> Result<Arc<rustls::ClientConfig>> {
    let mut roots = rustls::RootCertStore::empty();
    if let Some(path) = SYSTEM_ROOTS.iter().find(|p| std::path::Path::new(p).exists()) {
        let certs = CertificateDer::pem_file_iter(path).into_iter().flatten().flatten();
        roots.add_parsable_certificates(certs);
    }
    if let Some(path) = &args.ca {
        let certs: Vec<_> = CertificateDer::pem_file_iter(path)
            .with_context(|| format!("cannot read --ca {}", path.display()))?
            .collect::<Result<_, _>>()
            .with_context(|| format!("--ca {} is not a PEM certificate file", path.display()))?;
        if certs.is_empty() {
            bail!("--ca {} holds no certificate (expected PEM: -----BEGIN CERTIFICATE-----)", path.display());
        }
        let (_, refused) = roots.add_parsable_certificates(certs);
        if refused > 0 {
            bail!("--ca {}: {refused} certificate(s) could not be used", path.display());
        }
    }
    roots.add_parsable_certificates(args.trust.iter().map(|der| CertificateDer::from(der.clone())));
    let builder = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&versions(args.tls_version))
        .context("TLS versions")?
        .with_root_certificates(roots);
    let mut config = match (&args.client_cert, &args.client_key) {
        (Some(cert), Some(key)) => {
            let (chain, key) = identity((cert, "--client-cert"), (key, "--client-key"))?;
            builder
                .with_client_auth_cert(chain, key)
                .context("--client-cert and --client-key do not make a TLS identity")?
        }
        _ => builder.with_no_client_auth(),
    };
    if args.insecure {
        config.dangerous().set_certificate_verifier(Arc::new(AnyCertificate(provider())));
    }
    config.alpn_protocols = alpn.map(|a| vec![a.to_vec()]).unwrap_or_default();
    if !args.tls_resume {
        config.resumption = rustls::client::Resumption::disabled();
    }
    Ok(Arc::new(config))
}

/// The name to check in the server's certificate: the URL's host.
pub fn server_name(host: &str) -> Result<ServerName<'static>> {
    ServerName::try_from(host.to_string())
        .map_err(|_| anyhow::anyhow!("'{host}' is not a valid TLS server name"))
}

/// `--insecure`: any certificate is accepted; the handshake's signatures are still checked (so
/// the handshake costs what a verified one does, less the chain).
#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// A built-in server's TLS options.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ServeTlsArgs {
    /// Serve TLS (https, wss, sios, nsq+https; the nsq sink also upgrades its TCP side on
    /// `IDENTIFY` `tls_v1` as nsqd does). Without --cert/--key, a self-signed certificate for
    /// localhost, 127.0.0.1 and ::1 is made at start and written beside the server's output.
    #[arg(long)]
    pub tls: bool,
    /// The certificate chain (PEM) to serve; with --key.
    #[arg(long, value_name = "FILE", requires = "key")]
    pub cert: Option<PathBuf>,
    /// The private key (PEM) of --cert.
    #[arg(long, value_name = "FILE", requires = "cert")]
    pub key: Option<PathBuf>,
    /// Serve only this TLS version (default both).
    #[arg(long = "serve-tls-version", value_enum, value_name = "1.2|1.3")]
    pub version: Option<TlsVersion>,
    /// Require every client to present a certificate signed by a CA in this PEM file (mutual
    /// TLS); a client without one, or with another, fails its handshake.
    #[arg(long, value_name = "FILE")]
    pub client_ca: Option<PathBuf>,
}

/// A certificate chain and its private key, read from PEM files named by `flags`.
fn identity(
    (cert, cert_flag): (&PathBuf, &str),
    (key, key_flag): (&PathBuf, &str),
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .with_context(|| format!("cannot read {cert_flag} {}", cert.display()))?
        .collect::<Result<_, _>>()
        .with_context(|| format!("{cert_flag} {} is not a PEM certificate file", cert.display()))?;
    if chain.is_empty() {
        bail!("{cert_flag} {} holds no certificate", cert.display());
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .with_context(|| format!("{key_flag} {} holds no PEM private key", key.display()))?;
    Ok((chain, key))
}

/// A server's TLS: its configuration, and its certificate (to trust it, or write it out).
#[derive(Debug, Clone)]
pub struct ServerTls {
    pub config: Arc<rustls::ServerConfig>,
    pub cert_der: Vec<u8>,
    pub cert_pem: String,
}

impl ServerTls {
    /// The configuration for a server agreeing to `alpn` (the one made offers `http/1.1`).
    pub fn config_for(&self, alpn: Option<&[u8]>) -> Arc<rustls::ServerConfig> {
        let wanted: Vec<Vec<u8>> = alpn.map(<[u8]>::to_vec).into_iter().collect();
        if self.config.alpn_protocols == wanted
            || alpn.is_some_and(|a| self.config.alpn_protocols.iter().any(|p| p == a))
        {
            return self.config.clone();
        }
        let mut config = (*self.config).clone();
        config.alpn_protocols = wanted;
        Arc::new(config)
    }
}

impl ServeTlsArgs {
    /// The server's TLS, or `None` without `--tls`/`--cert`.
    pub fn server(&self) -> Result<Option<ServerTls>> {
        let (chain, key, pem) = match (&self.cert, &self.key) {
            (Some(cert), Some(key)) => {
                let (chain, key) = identity((cert, "--cert"), (key, "--key"))?;
                let pem = std::fs::read_to_string(cert)?;
                (chain, key, pem)
            }
            _ if self.tls => {
                let names = vec!["localhost".to_string(), "127.0.0.1".to_string(), "::1".to_string()];
                let made = rcgen::generate_simple_self_signed(names).context("making a certificate")?;
                let key = PrivateKeyDer::try_from(made.signing_key.serialize_der())
                    .map_err(|e| anyhow::anyhow!("the key just made: {e}"))?;
                (vec![made.cert.der().clone()], key, made.cert.pem())
            }
            _ if self.client_ca.is_some() => {
                bail!("--client-ca requires clients' certificates over TLS: add --tls")
            }
            _ => return Ok(None),
        };
        let cert_der = chain[0].to_vec();
        let builder = rustls::ServerConfig::builder_with_provider(provider())
            .with_protocol_versions(&versions(self.version))
            .context("TLS versions")?;
        let builder = match &self.client_ca {
            Some(path) => {
                let mut roots = rustls::RootCertStore::empty();
                let certs: Vec<_> = CertificateDer::pem_file_iter(path)
                    .with_context(|| format!("cannot read --client-ca {}", path.display()))?
                    .collect::<Result<_, _>>()
                    .with_context(|| {
                        format!("--client-ca {} is not a PEM certificate file", path.display())
                    })?;
                let (added, _) = roots.add_parsable_certificates(certs);
                if added == 0 {
                    bail!("--client-ca {} holds no CA certificate that can be used", path.display());
                }
                let verifier =
                    rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
                        .build()
                        .with_context(|| format!("--client-ca {}", path.display()))?;
                builder.with_client_cert_verifier(verifier)
            }
            None => builder.with_no_client_auth(),
        };
        let mut config = builder
            .with_single_cert(chain, key)
            .context("the certificate and key do not make a TLS identity")?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Some(ServerTls { config: Arc::new(config), cert_der, cert_pem: pem }))
    }
}
