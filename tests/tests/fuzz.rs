//! A bounded fuzz run of everything the daemon decodes from outside (frames, both providers'
//! streams and the replies assembled from them): no input may panic. The long run is
//! `cargo bench -p tests --bench fuzz`.

use std::time::Duration;

use tests::fuzz::TARGETS;

/// Time each target gets here.
const BUDGET: Duration = Duration::from_millis(1500);

#[test]
fn no_input_panics_a_decoder() {
    for target in &TARGETS {
        arbtest::arbtest(|u| {
            let input = (target.input)(u)?;
            (target.run)(&input);
            Ok(())
        })
        .budget(BUDGET);
    }
}
