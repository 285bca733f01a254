//! The host machine fed arbitrary reply lines never panics, closes every
//! call exactly once and nothing else (`fuzz_host_replies`, which a fuzz
//! target calls with its input too).

use limen_core::flow::tool::fuzz_host_replies;
use proptest::prelude::*;

/// A reply line, well formed or nearly, for one of the eight calls out.
fn reply_line() -> impl Strategy<Value = String> {
    let call = prop_oneof![(0u8..10).prop_map(|c| c.to_string()), "[a-z\"\\\\]{0,3}"];
    let value = prop_oneof![
        Just(r#"{"n":1}"#.to_owned()),
        Just(r#"{"n":1,"tags":["a"]}"#.to_owned()),
        Just(r#"{"n":"1"}"#.to_owned()),
        Just("1e999999".to_owned()),
        Just("[[[[[[[[[[[[".to_owned()),
        "[ -~]{0,12}",
    ];
    let tag = prop_oneof![
        Just("Ok"),
        Just("Failed"),
        Just("NotRun"),
        Just("Unknown"),
        Just("Bad")
    ];
    (call, tag, value, 0u8..6).prop_map(|(call, tag, value, shape)| match shape {
        0 => format!(
            r#"{{"jsonrpc":"2.0","method":"reply","params":{{"runId":"r","callId":"{call}","outcome":{{"{tag}":{value}}}}}}}"#
        ),
        1 => format!(
            r#"{{"params":{{"outcome":{{"{tag}":{value}}},"callId":"{call}","runId":"r"}},"method":"reply","jsonrpc":"2.0"}}"#
        ),
        2 => format!(r#"{{"jsonrpc":"2.0","id":{call},"result":{value}}}"#),
        3 => format!(r#"{{"jsonrpc":"2.0","method":"reply","params":{{"runId":"r","callId":"{call}"}}}}"#),
        4 => format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{tag}"}}"#),
        _ => value,
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bytes_break_no_rule(data in proptest::collection::vec(any::<u8>(), 0..2048)) {
        fuzz_host_replies(&data);
    }

    #[test]
    fn near_replies_in_any_split_break_no_rule(
        split in any::<u8>(),
        lines in proptest::collection::vec(reply_line(), 0..24),
        garbage in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        let mut data = vec![split];
        for (i, line) in lines.iter().enumerate() {
            data.extend_from_slice(line.as_bytes());
            if i % 5 == 4 {
                data.extend_from_slice(&garbage);
            }
            data.push(b'\n');
        }
        fuzz_host_replies(&data);
    }
}
