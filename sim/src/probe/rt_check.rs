//! tmp
#[cfg(test)]
mod tests {
    #[test]
    fn real_tokio_tcp_works_under_cfg_madsim() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let a = l.local_addr().unwrap();
            let t0 = std::time::Instant::now();
            let srv = tokio::spawn(async move { let (mut s, _) = l.accept().await.unwrap(); s.write_all(b"hi").await.unwrap(); });
            let mut c = tokio::net::TcpStream::connect(a).await.unwrap();
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            let mut b = Vec::new(); c.read_to_end(&mut b).await.unwrap();
            srv.await.unwrap();
            assert_eq!(b, b"hi");
            let el = t0.elapsed();
            assert!(el >= std::time::Duration::from_millis(50) && el < std::time::Duration::from_secs(5), "{el:?}");
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
            assert!(now > 1_700_000_000, "real wall clock outside a simulation: {now}");
        });
    }
}
