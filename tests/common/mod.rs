//! Helpers shared by the integration tests: built-in servers on ephemeral loopback ports,
//! bench runs parsed from a command line exactly as a user would type it, and real peers.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use wirebench::cmd::{Cli, Command as Cmd, bench};
use wirebench::engine::ServerHandle;
use wirebench::stats::Report;
#[allow(unused_imports)]
pub use wirebench::stats::ServerTally;

/// The CPU the built-in servers run on in tests, and the one the generator uses: different
/// CPUs where the machine has two or more.
pub fn server_cpu() -> usize {
    *wirebench::cpus::online().last().unwrap()
}
pub fn client_cpu() -> usize {
    wirebench::cpus::online()[0]
}

/// Start the built-in server `kind` (`http`, `ws`, `nsq`) on ephemeral loopback ports (all its
/// listeners).
pub fn start_builtin(kind: &str) -> ServerHandle {
    start_builtin_on("glommio", kind)
}

/// The same on the given engine.
pub fn start_builtin_on(engine: &str, kind: &str) -> ServerHandle {
    start_builtin_with(engine, kind, &[])
}

/// The same with more `serve` options (`--head-timeout 1s`, …), parsed as a user types them.
pub fn start_builtin_with(engine: &str, kind: &str, extra: &[&str]) -> ServerHandle {
    serve_started(engine, kind, extra).handle
}

/// `serve KIND --engine ENGINE EXTRA…` in this process on the server CPU, with all it reports
/// (its targets' URLs, its TLS certificate).
pub fn serve_started(engine: &str, kind: &str, extra: &[&str]) -> wirebench::cmd::serve::Started {
    let mut argv = vec!["wirebench", "serve", kind, "--listen", "127.0.0.1:0", "--engine", engine];
    argv.extend_from_slice(extra);
    let cli = <Cli as clap::Parser>::try_parse_from(argv).expect("arguments parse");
    let Cmd::Serve(args) = cli.command else { unreachable!() };
    wirebench::cmd::serve::start_args(&args, &[server_cpu()]).expect("built-in server starts")
}

/// A `serve KIND` process (the built binary) on CPU `cpu` for at most 60 s, and its address:
/// for tests that need a server in its own process (signals, CPU figures from `/proc`).
pub fn serve_process_on(cpu: usize, kind: &str, extra: &[&str]) -> (Peer, String) {
    use std::io::BufRead;
    let mut child = Command::new(env!("CARGO_BIN_EXE_wirebench"))
        .args(["serve", kind, "--listen", "127.0.0.1:0", "--cores", &cpu.to_string(), "-d", "60s"])
        .args(extra)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let line = lines.next().unwrap().unwrap();
    // The rest is read and dropped: a closed pipe would kill the server at its next line.
    std::thread::spawn(move || lines.for_each(drop));
    let addr =
        line.split("listening on ").nth(1).and_then(|s| s.split_whitespace().next()).unwrap().to_string();
    (Peer(child), addr)
}

/// The same on the server CPU.
pub fn serve_process(kind: &str, extra: &[&str]) -> (Peer, String) {
    serve_process_on(server_cpu(), kind, extra)
}

/// Every client engine; the loopback suites run on each.
pub const ENGINES: [&str; 3] = ["glommio", "tokio-uring", "uring"];
/// Engines that also run the built-in servers.
pub const SERVER_ENGINES: [&str; 3] = ["glommio", "tokio-uring", "uring"];

/// Run `wirebench bench ARGS…` in-process and return its report.
pub fn bench(args: &[&str]) -> Report {
    bench_on("glommio", args)
}

/// The same on the given engine.
pub fn bench_on(engine: &str, args: &[&str]) -> Report {
    bench::run(&bench_args(engine, args)).expect("bench runs").1
}

/// `wirebench bench --engine ENGINE ARGS…`, parsed.
pub fn bench_args(engine: &str, args: &[&str]) -> wirebench::cmd::BenchArgs {
    let mut argv = vec!["wirebench", "bench", "--engine", engine];
    argv.extend_from_slice(args);
    let cli = <Cli as clap::Parser>::try_parse_from(argv).expect("arguments parse");
    let Cmd::Bench(args) = cli.command else { unreachable!() };
    args
}

/// What `wirebench bench --engine ENGINE ARGS…` refuses with (it must refuse).
pub fn bench_refusal(engine: &str, args: &[&str]) -> String {
    bench::run(&bench_args(engine, args)).map(|_| ()).expect_err("refused").to_string()
}

/// Every figure a clean run must show: no error, every operation accounted for, every byte
/// audited on sockets whose counts could all be read.
pub fn assert_clean(r: &Report) {
    assert_eq!(
        r.errors_total(),
        0,
        "failed {:?}, connection errors {:?}: {:?}",
        r.failed,
        r.conn_errors,
        r.error_samples
    );
    assert_accounted(r);
    assert!(r.audit_matches(), "audit: {:?}, app totals tx {} rx {}", r.audit, r.tx.total(), r.rx.total());
    assert_eq!(r.audit.inexact_sockets(), 0, "{:?}", r.audit);
}

/// Every operation sent ended once: completed or failed.
pub fn assert_accounted(r: &Report) {
    assert_eq!(r.sent, r.ops + r.failed.total(), "sent = completed + failed: {:?}", r.failed);
}

/// A process that is killed when dropped, so a failing test leaves nothing running.
pub struct Peer(pub Child);
impl Drop for Peer {
    /// SIGTERM first, so a peer with children of its own (nginx's workers) takes them along;
    /// SIGKILL if it is still there after two seconds.
    fn drop(&mut self) {
        // SAFETY: a signal to our own child.
        unsafe { libc::kill(self.0.id() as libc::pid_t, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A free loopback port for a test's own peer (nginx, a Python server, a second `serve`), taken
/// from below the kernel's ephemeral range. A port the kernel hands out (`bind` to port 0, or an
/// outgoing connection's own port) can be given again to a test running beside this one between
/// this check and the peer's own bind; the peer then fails to bind and the test meets the other
/// test's server instead (seen once: an HTTPS bench against a plain built-in server). Below the
/// range only these calls hand ports out: each takes the next one after an offset drawn from
/// the process id, and keeps it if it binds over both TCP and UDP.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    const BASE: u32 = 10_000;
    let low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u32>().ok())
        .unwrap_or(32_768);
    if low < BASE + 1_000 {
        // A range that starts this low leaves no room below it: the kernel's choice, as before.
        return std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    }
    let span = low - BASE;
    let start = std::process::id().wrapping_mul(7_919) % span;
    for _ in 0..span {
        let port = (BASE + (start + NEXT.fetch_add(1, Ordering::Relaxed)) % span) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok()
            && std::net::UdpSocket::bind(("127.0.0.1", port)).is_ok()
        {
            return port;
        }
    }
    panic!("no free loopback port between {BASE} and {low}");
}

/// Wait until something accepts connections on `addr`, bounded.
pub fn wait_listening(addr: SocketAddr) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("nothing listens on {addr} after 10s");
}

/// A WebSocket server for fault tests on a free port: it completes the upgrade (with the right
/// `Sec-WebSocket-Accept`, or a wrong one), then plays `script` on each connection.
pub fn scripted_ws<F>(right_key: bool, script: F) -> SocketAddr
where
    F: Fn(&mut std::net::TcpStream) + Send + Sync + 'static,
{
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let script = std::sync::Arc::new(script);
    std::thread::spawn(move || {
        for stream in listener.incoming().take(10_000) {
            let Ok(mut s) = stream else { continue };
            let script = script.clone();
            std::thread::spawn(move || {
                let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                let mut buf = vec![0u8; 4096];
                let Ok(n) = s.read(&mut buf) else { return };
                let text = String::from_utf8_lossy(&buf[..n]).to_string();
                let key =
                    text.lines().find_map(|l| l.strip_prefix("Sec-WebSocket-Key: ")).unwrap_or("").trim();
                let key = if right_key { key.as_bytes() } else { b"wrong".as_slice() };
                let accept = wirebench::proto::ws::accept_key(key);
                let head = format!(
                    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n"
                );
                let _ = s.write_all(head.as_bytes());
                script(&mut s);
            });
        }
    });
    addr
}

/// Start nginx answering `Hello World` on a free port with its own config in a temp dir.
pub fn start_nginx() -> (Peer, SocketAddr) {
    start_nginx_with("", "")
}

/// The same, with words added to its `listen` (`ssl`) and to its `server` block (certificates).
pub fn start_nginx_with(listen: &str, server: &str) -> (Peer, SocketAddr) {
    start_nginx_conf("", listen, server)
}

/// The same, with words added to its `http` block too (a `log_format`).
pub fn start_nginx_conf(http: &str, listen: &str, server: &str) -> (Peer, SocketAddr) {
    let nginx = which("nginx").expect("nginx is installed (.ci/run installs it)");
    let port = free_port();
    let dir = std::env::temp_dir().join(format!("wirebench-nginx-{port}"));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = format!(
        "worker_processes 1;\ndaemon off;\nuser root;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
         events {{ worker_connections 4096; }}\n\
         http {{\n {http}\n access_log off;\n keepalive_requests 100000000;\n keepalive_timeout 60s;\n default_type text/plain;\n\
         client_body_temp_path {d}/body; proxy_temp_path {d}/proxy; fastcgi_temp_path {d}/fcgi; uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;\n\
         server {{ listen 127.0.0.1:{port} {listen}; {server} location / {{ return 200 \"Hello World\"; }} }}\n}}\n",
        d = dir.display()
    );
    let conf_path = dir.join("nginx.conf");
    std::fs::write(&conf_path, conf).unwrap();
    let child = Command::new(nginx)
        .arg("-c")
        .arg(&conf_path)
        .arg("-p")
        .arg(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("nginx starts");
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let peer = Peer(child);
    wait_listening(addr);
    (peer, addr)
}

pub fn which(name: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/usr/local/sbin".into(), "/usr/local/bin".into()])
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// nsqd from `tools/bin` (built by `tools/install-peers.sh`) or the PATH.
pub fn nsqd_binary() -> std::path::PathBuf {
    let local = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/bin/nsqd");
    if local.is_file() {
        return local;
    }
    which("nsqd").expect("nsqd is installed (tools/install-peers.sh builds it into tools/bin)")
}

/// Start a real nsqd on free loopback ports with its own data directory.
/// Returns the process and its TCP and HTTP addresses.
pub fn start_nsqd() -> (Peer, SocketAddr, SocketAddr) {
    let (tcp, http) = (free_port(), free_port());
    let dir = std::env::temp_dir().join(format!("wirebench-nsqd-{tcp}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let child = Command::new(nsqd_binary())
        .arg(format!("--tcp-address=127.0.0.1:{tcp}"))
        .arg(format!("--http-address=127.0.0.1:{http}"))
        .arg(format!("--data-path={}", dir.display()))
        .arg("--log-level=warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("nsqd starts");
    let peer = Peer(child);
    let (tcp, http): (SocketAddr, SocketAddr) =
        (format!("127.0.0.1:{tcp}").parse().unwrap(), format!("127.0.0.1:{http}").parse().unwrap());
    wait_listening(tcp);
    wait_listening(http);
    (peer, tcp, http)
}

/// `GET path` over a plain socket with `Connection: close`; the whole response as text.
pub fn http_get(addr: SocketAddr, path: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

/// The exact sizes of the protocols' messages, derived here from their wire formats, apart from
/// the encoders under test, so that a wrong encoder cannot agree with itself. Each says where
/// its bytes come from.
pub mod wire {
    /// NSQ `PUB`: `PUB <topic>\n`, a 4-byte big-endian length, the message.
    pub fn nsq_pub(topic: &str, message: usize) -> f64 {
        ("PUB ".len() + topic.len() + "\n".len() + 4 + message) as f64
    }
    /// NSQ `MPUB`: `MPUB <topic>\n`, the body's 4-byte length, then the body: a 4-byte count
    /// and, per message, a 4-byte length and the message.
    pub fn nsq_mpub(topic: &str, batch: usize, message: usize) -> f64 {
        ("MPUB ".len() + topic.len() + "\n".len() + 4 + 4 + batch * (4 + message)) as f64
    }
    /// NSQ `DPUB`: `DPUB <topic> <ms>\n`, a 4-byte length, the message.
    pub fn nsq_dpub(topic: &str, ms: u64, message: usize) -> f64 {
        ("DPUB ".len() + topic.len() + 1 + ms.to_string().len() + "\n".len() + 4 + message) as f64
    }
    /// An NSQ response frame: 4-byte size, 4-byte type (0), data.
    pub fn nsq_frame(data: &str) -> f64 {
        (4 + 4 + data.len()) as f64
    }
    /// A WebSocket frame's header: 2 bytes, then 2 or 8 more for lengths over 125 or 65535.
    fn ws_header(payload: usize) -> usize {
        2 + match payload {
            0..=125 => 0,
            126..=65535 => 2,
            _ => 8,
        }
    }
    /// A client's (masked) frame: header, 4-byte mask key, payload.
    pub fn ws_client_frame(payload: usize) -> f64 {
        (ws_header(payload) + 4 + payload) as f64
    }
    /// A server's (unmasked) frame: header, payload.
    pub fn ws_server_frame(payload: usize) -> f64 {
        (ws_header(payload) + payload) as f64
    }
    /// An HTTP/1.1 request as the generator writes it: request line, Host, Content-Length when
    /// there is a body, the user's headers, the empty line, the body.
    pub fn http_request(method: &str, target: &str, host: &str, headers: &[&str], body: usize) -> f64 {
        let mut head = format!("{method} {target} HTTP/1.1\r\nHost: {host}\r\n");
        if body > 0 {
            head += &format!("Content-Length: {body}\r\n");
        }
        for h in headers {
            head += &format!("{h}\r\n");
        }
        (head.len() + "\r\n".len() + body) as f64
    }
    /// A response with `Content-Length` and a body, and the given headers in between.
    pub fn http_response(status: &str, headers: &[&str], body: &str) -> f64 {
        let mut head = format!("HTTP/1.1 {status}\r\n");
        for h in headers {
            head += &format!("{h}\r\n");
        }
        head += &format!("Content-Length: {}\r\n\r\n", body.len());
        (head.len() + body.len()) as f64
    }
    /// The built-in `serve http`'s answer to a GET (`Hello World`) and to a request with a
    /// body (`OK`).
    pub fn hello() -> f64 {
        http_response("200 OK", &[], "Hello World")
    }
    pub fn ok() -> f64 {
        http_response("200 OK", &[], "OK")
    }
    /// nsqd's `200` to `/pub`, as captured from nsqd 1.3.0: its headers in Go's order, a
    /// 29-byte IMF-fixdate `Date`, body `OK`.
    pub fn nsqd_pub_ok() -> f64 {
        let date = "Mon, 30 Nov 2026 08:55:20 GMT";
        assert_eq!(date.len(), 29);
        let head = format!(
            "HTTP/1.1 200 OK\r\nX-Nsq-Content-Type: nsq; version=1.0\r\nDate: {date}\r\nContent-Length: 2\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n"
        );
        (head.len() + "OK".len()) as f64
    }
}

/// Socket.IO's sizes, from its packet format (`proto::sio`'s module comment).
pub mod sio_wire {
    use super::wire::{ws_client_frame, ws_server_frame};

    /// The namespace's part of a packet: nothing for `/`, else `/ns,`.
    fn nsp(namespace: &str) -> String {
        if namespace == "/" { String::new() } else { format!("{namespace},") }
    }
    /// An event: `42` [`/ns,`] [id] `["event","payload"]`, in a masked text frame.
    pub fn event(namespace: &str, id: Option<u64>, event: &str, payload: usize) -> f64 {
        let id = id.map(|i| i.to_string()).unwrap_or_default();
        ws_client_frame(2 + nsp(namespace).len() + id.len() + format!("[\"{event}\",\"\"]").len() + payload)
    }
    /// Its acknowledgement with the payload back: `43` [`/ns,`] id `["payload"]`, unmasked.
    pub fn ack(namespace: &str, id: u64, payload: usize) -> f64 {
        ws_server_frame(2 + nsp(namespace).len() + id.to_string().len() + "[\"\"]".len() + payload)
    }
    /// A reply event from the server: `42` [`/ns,`] `["reply","payload"]`, unmasked.
    pub fn reply(namespace: &str, reply: &str, payload: usize) -> f64 {
        ws_server_frame(2 + nsp(namespace).len() + format!("[\"{reply}\",\"\"]").len() + payload)
    }
}

/// Render `svg` to a PNG with headless Chromium; returns the PNG's path.
pub fn screenshot(svg: &std::path::Path, png: &std::path::Path) {
    screenshot_sized(svg, png, (1200, 560))
}

/// A test's picture kept where `WIREBENCH_SCREENSHOTS` names (`tools/screenshots.sh` points it
/// at `docs/`, whose PNGs the README shows), as `name`; nowhere without it.
pub fn keep_screenshot(png: &std::path::Path, name: &str) {
    if let Ok(dir) = std::env::var("WIREBENCH_SCREENSHOTS") {
        std::fs::copy(png, std::path::Path::new(&dir).join(name)).expect("the screenshot is kept");
    }
}

/// The same in a window of `(width, height)`.
pub fn screenshot_sized(svg: &std::path::Path, png: &std::path::Path, (width, height): (u32, u32)) {
    let chromium =
        which("chromium").or_else(|| which("chromium-browser")).expect("chromium (.ci/run installs it)");
    let profile = std::env::temp_dir().join(format!("wirebench-chromium-{}", free_port()));
    let status = std::process::Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--window-size={width},{height}"))
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", svg.display()))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("chromium runs");
    assert!(status.success());
}

/// The pixels of a PNG (RGB or RGBA), and its size.
pub fn pixels(png: &std::path::Path) -> (Vec<Vec<u8>>, (u32, u32)) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(png).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let frame = reader.next_frame(&mut buf).unwrap();
    let channels = frame.line_size / frame.width as usize;
    (buf[..frame.buffer_size()].chunks(channels).map(<[u8]>::to_vec).collect(), (frame.width, frame.height))
}

/// A pixel within a few levels of `colour`.
pub fn near(p: &[u8], colour: [u8; 3]) -> bool {
    p.iter().zip(colour).all(|(a, b)| a.abs_diff(b) < 12)
}

/// A test that cannot run here says why and returns; in CI (`CI=true`), which installs and
/// allows everything the tests need (`.ci/run`), a skip is a failure instead.
pub fn skip(why: &str) {
    assert!(std::env::var("CI").as_deref() != Ok("true"), "CI must not skip this test: {why}");
    eprintln!("skipped: {why}");
}

/// A certificate for 127.0.0.1 and localhost (rcgen: an end-entity certificate, not a CA's),
/// written as PEM files in a fresh directory.
pub fn h3_cert_files(tag: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
    let made = rcgen::generate_simple_self_signed(names).unwrap();
    let dir = std::env::temp_dir().join(format!("wirebench-h3-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, made.cert.pem()).unwrap();
    std::fs::write(&key, made.signing_key.serialize_pem()).unwrap();
    (cert, key)
}

/// aioquic's HTTP/3 server on a free UDP port, its stdout (its count, once stopped), and the
/// CA file that trusts it.
pub fn start_aioquic() -> (Peer, std::io::BufReader<std::process::ChildStdout>, u16, String) {
    use std::io::BufRead;
    let (cert, key) = h3_cert_files("aioquic");
    let port = free_port();
    let mut child = Command::new("python3")
        .arg(format!("{}/tools/h3-server.py", env!("CARGO_MANIFEST_DIR")))
        .args([&port.to_string(), cert.to_str().unwrap(), key.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3 runs");
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut ready = String::new();
    out.read_line(&mut ready).unwrap();
    assert_eq!(ready.trim(), format!("listening {port}"), "aioquic is installed (tools/install-peers.sh)");
    (Peer(child), out, port, cert.display().to_string())
}
