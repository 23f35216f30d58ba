//! The limits of what an image may take: pixels, decoded bytes, and the memory of two decodes
//! at once.

use super::{crc32, png, store};

/// A PNG whose header claims `width`×`height` at `depth` bits a channel (RGBA), with no pixels.
fn png_claiming(width: u32, height: u32, depth: u8) -> Vec<u8> {
    let mut bytes = png(1, 1);
    // IHDR's data starts at byte 16: width, height, bit depth; its CRC covers type and data
    // (12..29).
    bytes[16..20].copy_from_slice(&width.to_be_bytes());
    bytes[20..24].copy_from_slice(&height.to_be_bytes());
    bytes[24] = depth;
    let crc = crc32(&bytes[12..29]);
    bytes[29..33].copy_from_slice(&crc.to_be_bytes());
    bytes
}

#[test]
fn more_than_40_megapixels_are_refused_before_decoding() {
    let (_dir, store) = store();
    let err = store
        .put("8k-plus.png", &png_claiming(8000, 5001, 8))
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("8k-plus.png is 8000×5001 pixels, more than an attached image may have"),
        "{err}"
    );
    // An 8K photo's size is taken (the missing pixels make it damaged, not too large).
    let err = store
        .put("8k.png", &png_claiming(7680, 4320, 8))
        .unwrap_err();
    assert!(
        matches!(err, crate::images::ImageError::Damaged { .. }),
        "{err}"
    );
}

#[test]
fn a_16_bit_image_is_counted_at_its_real_size() {
    let (_dir, store) = store();
    // 30 megapixels: within the count, but 240 MB decoded at 16 bits a channel.
    let err = store
        .put("deep.png", &png_claiming(6000, 5000, 16))
        .unwrap_err();
    assert!(
        matches!(err, crate::images::ImageError::TooLarge { .. }),
        "{err}"
    );
    assert!(
        err.to_string().starts_with(
            "deep.png is 6000×5000 pixels, too many bytes decoded at its colour depth, more than \
             an attached image may have (20000 px a side, 40 megapixels, 160 MB decoded): scale \
             it down"
        ),
        "{err}"
    );
    let err = store
        .put("flat.png", &png_claiming(6000, 5000, 8))
        .unwrap_err();
    assert!(
        matches!(err, crate::images::ImageError::Damaged { .. }),
        "{err}"
    );
}

/// The kB a line of `/proc/self/status` gives (`VmRSS`, `VmHWM`).
fn status_kb(key: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|rest| rest.trim().trim_end_matches(" kB").parse().ok())
        .unwrap()
}

/// The environment variable naming the image [`peak_probe`] decodes.
const PROBE: &str = "AGENTD_IMAGES_PEAK_PROBE";

#[test]
fn two_of_the_largest_images_decoded_at_once_stay_well_under_600_mb() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("largest.png");
    // 40 megapixels with alpha: the most pixels and decoded bytes an image may have.
    std::fs::write(&path, png(8000, 5000)).unwrap();
    // In a process of its own, so that no other test's memory is counted.
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "images::tests::limits::peak_probe",
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        .args(["--test-threads", "1"])
        .env(PROBE, &path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    let grown: u64 = stdout
        .lines()
        .find_map(|line| line.split_once("peak growth: ")?.1.strip_suffix(" kB"))
        .unwrap_or_else(|| panic!("no figure in {stdout}"))
        .parse()
        .unwrap();
    eprintln!("two decodes at once: peak growth {} MB", grown >> 10);
    assert!(grown < 480 << 10, "{} MB", grown >> 10);
}

#[test]
#[ignore = "run by two_of_the_largest_images_decoded_at_once_stay_well_under_600_mb"]
fn peak_probe() {
    let path = std::env::var_os(PROBE).unwrap();
    let bytes = std::fs::read(path).unwrap();
    let (_dir, store) = store();
    let before = status_kb("VmRSS");
    std::thread::scope(|scope| {
        for name in ["a.png", "b.png"] {
            let (store, bytes) = (&store, &bytes);
            scope.spawn(move || {
                let image = store.put(name, bytes).unwrap();
                assert_eq!((image.width, image.height), (2000, 1250));
            });
        }
    });
    println!("peak growth: {} kB", status_kb("VmHWM") - before);
}
