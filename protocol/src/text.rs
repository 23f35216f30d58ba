//! Numbers as people read them, in the daemon's messages and the clients' views alike.

/// `1234567` as `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn thousands_are_separated_by_commas() {
        assert_eq!(super::thousands(1_234_567), "1,234,567");
        assert_eq!(super::thousands(200_000), "200,000");
        assert_eq!(super::thousands(12), "12");
    }
}
