//! HPACK's tests: the RFC's Appendix C both ways, integers, limits, size updates, random
//! lists round-tripped with the tables in step, and replayed blocks against blocks decoded in full.

use super::*;

fn hex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

fn decoded(d: &mut Decoder, block: &[u8]) -> Result<Vec<(String, String)>, Error> {
    let mut fields = Vec::new();
    d.decode(block, |n, v| {
        fields.push((String::from_utf8_lossy(n).into_owned(), String::from_utf8_lossy(v).into_owned()))
    })?;
    Ok(fields)
}

fn owned(fields: &[(&str, &str)]) -> Vec<(String, String)> {
    fields.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect()
}

#[test]
fn integers_as_in_c1() {
    for (value, prefix, bytes) in [
        (10u64, 5u8, vec![0x0a]),
        (1337, 5, vec![0x1f, 0x9a, 0x0a]),
        (42, 8, vec![0x2a]),
        (31, 5, vec![0x1f, 0x00]),
    ] {
        let mut out = Vec::new();
        encode_int(&mut out, 0, prefix, value);
        assert_eq!(out, bytes);
        assert_eq!(decode_int(&bytes, prefix), Ok((value, bytes.len())));
    }
    assert_eq!(decode_int(&[0x1f, 0x9a], 5), Err(Error::Truncated));
    assert_eq!(decode_int(&[0x1f, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01], 5), Err(Error::Integer));
    assert_eq!(decode_int(&[], 5), Err(Error::Truncated));
}

/// A field larger than the table (4,096 octets by default: here a 4,100-octet value) goes
/// as a literal without indexing, by hand: 0x00 (new name), 7 + "x-large", then the
/// value's length (0x7f, then 4,100 − 127 = 3,973 in 7-bit groups: 0x85 0x1f) and the
/// value; the table keeps the small field inserted before it, which the next block indexes.
#[test]
fn a_field_larger_than_the_table_is_not_indexed() {
    let big = vec![b'v'; 4_100];
    let mut e = Encoder::new(false);
    let mut d = Decoder::new(DEFAULT_TABLE_SIZE, 64 << 10);
    for round in 0..2 {
        let mut out = Vec::new();
        e.encode([(&b"x-small"[..], &b"1"[..]), (b"x-large", &big)], &mut out);
        let small = if round == 0 { 1 + 8 + 2 } else { 1 };
        assert_eq!(out.len(), small + 1 + 8 + 3 + 4_100, "round {round}");
        assert_eq!(
            out[small..small + 12],
            [0x00, 7, b'x', b'-', b'l', b'a', b'r', b'g', b'e', 0x7f, 0x85, 0x1f]
        );
        let fields = decoded(&mut d, &out).unwrap();
        assert_eq!(fields[1].1.len(), 4_100);
        assert_eq!(e.table.len(), 1, "the small field alone is kept");
    }
}

/// nginx's answer: `:status` 200 indexed, then `server`, `date`, `content-type` and
/// `content-length` as literals with incremental indexing, each naming the static table.
fn nginx_block(date: &str) -> Vec<u8> {
    let mut b = vec![0x88];
    for (index, value) in [(54u8, "nginx"), (33, date), (31, "text/plain"), (28, "11")] {
        b.push(0x40 | index);
        encode_str(&mut b, value.as_bytes(), true);
    }
    b
}

/// A block decoded again from its record gives the same fields and leaves the same table as
/// decoding it in full, through evictions, a block naming a dynamic entry (not replayed:
/// it means whatever that entry holds now), a size update and a broken block; and the
/// record is used, also past the point where its inserts leave the table as it was (runs of
/// up to 40 blocks of about 210 table octets each, in a table of 4,096).
#[test]
fn a_replayed_block_is_the_block_decoded() {
    let mut d = Decoder::new(DEFAULT_TABLE_SIZE, 64 << 10);
    let mut full = Decoder::new(DEFAULT_TABLE_SIZE, 64 << 10).without_replay();
    let (mut replayed, mut steady) = (0, 0);
    for i in 0..400 {
        let date = format!("Sun, 06 Dec 2026 05:{:02}:{:02} GMT", i / 100, (i / 40) % 60);
        let block = match i % 100 {
            17 => vec![0xbe, 0xc0],             // the newest dynamic entries, by index
            29 => vec![0x3f, 0xe1, 0x0f, 0x88], // a size update (2,048), then :status 200
            31 => vec![0x3f, 0xe1, 0x1f, 0x88], // back to 4,096
            41 => vec![0x76, 0x85],             // cut short: an error, whole or replayed
            43 => vec![0x76, 0x05, b'n', b'g', b'i', b'n', b'x', 0x5c, 0x01, b'9'],
            _ => nginx_block(&date),
        };
        let replays = d.replay.valid && d.replay.block == block;
        replayed += usize::from(replays);
        steady += usize::from(replays && d.replay.repeated > d.table.max);
        assert_eq!(decoded(&mut d, &block), decoded(&mut full, &block), "block {i}");
        assert_eq!(d.table, full.table, "block {i}");
    }
    assert!(replayed > 250, "replayed {replayed} blocks of 400");
    assert!(steady > 50, "{steady} blocks replayed without touching the table");
    assert!(d.table.len() > 10 && d.table.size() <= DEFAULT_TABLE_SIZE);
}

/// C.3 to C.6: each block decodes to its fields, leaves the table at the RFC's size, and
/// the encoder, given the same fields, writes the same bytes.
#[test]
fn appendix_c_examples_both_ways() {
    let requests: [&[(&str, &str)]; 3] = [
        &[(":method", "GET"), (":scheme", "http"), (":path", "/"), (":authority", "www.example.com")],
        &[
            (":method", "GET"),
            (":scheme", "http"),
            (":path", "/"),
            (":authority", "www.example.com"),
            ("cache-control", "no-cache"),
        ],
        &[
            (":method", "GET"),
            (":scheme", "https"),
            (":path", "/index.html"),
            (":authority", "www.example.com"),
            ("custom-key", "custom-value"),
        ],
    ];
    let location = ("location", "https://www.example.com");
    let date = |s: &'static str| ("date", s);
    let responses: [&[(&str, &str)]; 3] = [
        &[(":status", "302"), ("cache-control", "private"), date("Mon, 21 Oct 2013 20:13:21 GMT"), location],
        &[(":status", "307"), ("cache-control", "private"), date("Mon, 21 Oct 2013 20:13:21 GMT"), location],
        &[
            (":status", "200"),
            ("cache-control", "private"),
            date("Mon, 21 Oct 2013 20:13:22 GMT"),
            location,
            ("content-encoding", "gzip"),
            ("set-cookie", "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1"),
        ],
    ];
    type Fields<'a> = [&'a [(&'a str, &'a str)]; 3];
    /// A section: its name, Huffman, the table size, the fields, each block with the
    /// table's size after it.
    type Case<'a> = (&'a str, bool, usize, &'a Fields<'a>, [(&'a str, usize); 3]);
    let cases: [Case; 4] = [
        (
            "C.3",
            false,
            4096,
            &requests,
            [
                ("828684410f7777772e6578616d706c652e636f6d", 57),
                ("828684be58086e6f2d6361636865", 110),
                ("828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565", 164),
            ],
        ),
        (
            "C.4",
            true,
            4096,
            &requests,
            [
                ("828684418cf1e3c2e5f23a6ba0ab90f4ff", 57),
                ("828684be5886a8eb10649cbf", 110),
                ("828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf", 164),
            ],
        ),
        (
            "C.5",
            false,
            256,
            &responses,
            [
                (
                    "4803333032580770726976617465611d4d6f6e2c203231204f637420323031332032303a31333a323120474d546e1768747470733a2f2f7777772e6578616d706c652e636f6d",
                    222,
                ),
                ("4803333037c1c0bf", 222),
                (
                    "88c1611d4d6f6e2c203231204f637420323031332032303a31333a323220474d54c05a04677a69707738666f6f3d4153444a4b48514b425a584f5157454f50495541585157454f49553b206d61782d6167653d333630303b2076657273696f6e3d31",
                    215,
                ),
            ],
        ),
        (
            "C.6",
            true,
            256,
            &responses,
            [
                (
                    "488264025885aec3771a4b6196d07abe941054d444a8200595040b8166e082a62d1bff6e919d29ad171863c78f0b97c8e9ae82ae43d3",
                    222,
                ),
                ("4883640effc1c0bf", 222),
                (
                    "88c16196d07abe941054d444a8200595040b8166e084a62d1bffc05a839bd9ab77ad94e7821dd7f2e6c7b335dfdfcd5b3960d5af27087f3672c1ab270fb5291f9587316065c003ed4ee5b1063d5007",
                    215,
                ),
            ],
        ),
    ];
    for (name, huffman, size, lists, blocks) in cases {
        let mut d = Decoder::new(size, 1 << 20);
        let mut e = Encoder::new(huffman);
        e.table.set_max(size);
        for (i, ((block, table_size), fields)) in blocks.iter().zip(lists.iter()).enumerate() {
            let block = hex(block);
            assert_eq!(decoded(&mut d, &block), Ok(owned(fields)), "{name}.{}", i + 1);
            assert_eq!(d.table().size(), *table_size, "{name}.{}", i + 1);
            let mut out = Vec::new();
            e.encode(fields.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())), &mut out);
            assert_eq!(out, block, "{name}.{} encoded", i + 1);
            assert_eq!(e.table(), d.table());
        }
    }
}

#[test]
fn appendix_c2_literals() {
    for (block, fields, table_size) in [
        ("400a637573746f6d2d6b65790d637573746f6d2d686561646572", vec![("custom-key", "custom-header")], 55),
        ("040c2f73616d706c652f70617468", vec![(":path", "/sample/path")], 0),
        ("100870617373776f726406736563726574", vec![("password", "secret")], 0),
        ("82", vec![(":method", "GET")], 0),
    ] {
        let mut d = Decoder::new(4096, 1 << 20);
        assert_eq!(decoded(&mut d, &hex(block)), Ok(owned(&fields)), "{block}");
        assert_eq!(d.table().size(), table_size);
    }
}

#[test]
fn size_updates_indexes_and_limits() {
    let mut d = Decoder::new(4096, 1 << 20);
    // An update to 0 empties the table; one above what this side allows is an error, as
    // is one after a field.
    assert_eq!(
        decoded(&mut d, &hex("400a637573746f6d2d6b65790d637573746f6d2d686561646572")).map(|f| f.len()),
        Ok(1)
    );
    assert_eq!(decoded(&mut d, &hex("20be")), Err(Error::Index(62)));
    let mut big = Vec::new();
    encode_int(&mut big, 0x20, 5, 4097);
    assert_eq!(decoded(&mut d, &big), Err(Error::TableSize));
    assert_eq!(decoded(&mut d, &hex("8220")), Err(Error::LateSizeUpdate));
    assert_eq!(decoded(&mut d, &hex("80")), Err(Error::Index(0)));
    assert_eq!(decoded(&mut d, &hex("410f7777")), Err(Error::Truncated));
    assert_eq!(decoded(&mut d, &hex("4181ff")), Err(Error::Huffman));
    // The header list limit counts each field as a table entry would.
    let mut small = Decoder::new(4096, 32 + 7 + 3);
    assert_eq!(decoded(&mut small, &hex("82")).map(|f| f.len()), Ok(1));
    assert_eq!(decoded(&mut small, &hex("8282")), Err(Error::TooLarge));
    // An entry larger than the table empties it and is not kept.
    let mut e = Encoder::new(false);
    e.peer_table_size(64);
    let mut out = Vec::new();
    e.encode([(&b"x-big"[..], &[b'v'; 40][..])], &mut out);
    assert_eq!(out[0], 0x20 | 0x1f, "the size update first");
    assert!(e.table().is_empty());
    // Lowered to 0 then raised again before a block: both are said, the least first.
    let mut e = Encoder::new(false);
    e.peer_table_size(0);
    e.peer_table_size(4096);
    let mut out = Vec::new();
    e.encode([(&b":method"[..], &b"GET"[..])], &mut out);
    assert_eq!(out, [0x20, 0x3f, 0xe1, 0x1f, 0x82]);
    let mut d = Decoder::new(4096, 1 << 20);
    assert_eq!(decoded(&mut d, &out), Ok(owned(&[(":method", "GET")])));
}

#[test]
fn random_lists_round_trip_with_the_tables_in_step() {
    let mut rng = fastrand::Rng::with_seed(11);
    let names = [":path", ":method", "content-type", "x-a", "x-bb", "cookie", "user-agent"];
    for huffman in [false, true] {
        let (mut e, mut d) = (Encoder::new(huffman), Decoder::new(4096, 1 << 20));
        for _ in 0..300 {
            let fields: Vec<(String, String)> = (0..rng.usize(1..8))
                .map(|_| {
                    let value: String = (0..rng.usize(0..300)).map(|_| rng.alphanumeric()).collect();
                    (names[rng.usize(..names.len())].to_string(), value)
                })
                .collect();
            let mut block = Vec::new();
            e.encode(fields.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())), &mut block);
            assert_eq!(decoded(&mut d, &block), Ok(fields.clone()));
            assert_eq!(e.table(), d.table());
        }
    }
}

/// A block that replays the record the caller names gives no fields; any other block gives
/// them, and says which record holds them now — none for a block that both names the dynamic
/// table and inserts into it (its replay would name entries its own inserts moved); one that
/// names it and inserts nothing is kept, and replayed while no other block comes between.
#[test]
fn a_known_record_gives_no_fields_and_the_same_table() {
    let mut d = Decoder::new(DEFAULT_TABLE_SIZE, 64 << 10);
    let mut full = Decoder::new(DEFAULT_TABLE_SIZE, 64 << 10).without_replay();
    let (a, b) = (nginx_block("Sun, 06 Dec 2026 08:00:00 GMT"), nginx_block("Sun, 06 Dec 2026 08:00:01 GMT"));
    let dynamic = vec![0xbe];
    // The newest entry, then `x: y` inserted.
    let both = vec![0xbe, 0x40, 0x01, b'x', 0x01, b'y'];
    let count = |block: &Vec<u8>| {
        if *block == dynamic {
            1
        } else if *block == both {
            2
        } else {
            5
        }
    };
    // Each block, whether the caller forgot what it knew, and the record and fields given.
    let steps: [(&Vec<u8>, bool, Option<u64>, usize); 14] = [
        (&a, false, Some(1), 5),
        (&a, false, Some(1), 0),
        (&a, false, Some(1), 0),
        (&b, false, Some(2), 5),
        (&b, true, Some(2), 5), // replayed, but the caller does not know it: fields given
        (&b, false, Some(2), 0),
        (&dynamic, false, Some(3), 1),
        (&dynamic, false, Some(3), 0),
        (&b, false, Some(4), 5),
        (&both, false, None, 2),
        (&both, false, None, 2),
        (&dynamic, false, Some(5), 1), // the table moved since record 3: decoded again
        (&b, false, Some(6), 5),
        (&a, false, Some(7), 5),
    ];
    let mut known = 0;
    for (i, &(block, forgot, record, given)) in steps.iter().enumerate() {
        let mut fields = Vec::new();
        let got = d.decode_known(block, if forgot { 0 } else { known }, |n, v| {
            fields.push((n.to_vec(), v.to_vec()))
        });
        assert_eq!((got.unwrap(), fields.len()), (record, given), "block {i}");
        let all = decoded(&mut full, block).unwrap();
        assert_eq!(all.len(), count(block));
        if given > 0 {
            let fields: Vec<_> = fields
                .iter()
                .map(|(n, v)| (String::from_utf8_lossy(n).into(), String::from_utf8_lossy(v).into()))
                .collect();
            assert_eq!(fields, all, "block {i}");
        }
        assert_eq!(d.table, full.table, "block {i}");
        known = got.unwrap().unwrap_or(0);
    }
}

/// A kept block is given back only for the same fields in the same state: the encode that
/// inserted an entry is not kept (its octets would insert it again), the one after it is; a
/// field changed, one more or one fewer, or any change to the table since, and it is not.
#[test]
fn the_last_block_comes_back_for_the_same_fields_in_the_same_state_only() {
    let mut enc = Encoder::new(true);
    let mut last = LastBlock::default();
    let fields: &[(&[u8], &[u8])] = &[(b":status", b"200"), (b"content-length", b"11")];
    let mut blocks = Vec::new();
    for _ in 0..3 {
        let before = enc.state();
        let mut block = Vec::new();
        match last.get(before, fields) {
            Some(kept) => block.extend_from_slice(kept),
            None => {
                enc.encode(fields.iter().copied(), &mut block);
                last.keep(before, enc.state(), fields, &block);
            }
        }
        blocks.push(block);
    }
    // The first inserted content-length (not kept); the second indexed it, and was kept.
    assert_ne!(blocks[0], blocks[1]);
    assert_eq!(blocks[1], blocks[2]);
    assert_eq!(blocks[1], [0x88, 0xbe]);
    let state = enc.state();
    assert_eq!(last.get(state, fields), Some(&[0x88, 0xbe][..]));
    assert_eq!(last.get(state, &[(b":status", b"200"), (b"content-length", b"12")]), None);
    assert_eq!(last.get(state, &fields[..1]), None);
    assert_eq!(last.get(state, &[fields[0], fields[1], (b"x", b"y")]), None);
    // The table changed: a new entry, or a size update waiting to be announced.
    enc.encode([(&b"x-new"[..], &b"1"[..])], &mut Vec::new());
    assert_eq!(last.get(enc.state(), fields), None);
    assert_eq!(last.get(state, fields), Some(&[0x88, 0xbe][..]), "kept for its own state");
    enc.peer_table_size(100);
    assert_eq!(enc.state(), None);
    assert_eq!(last.get(enc.state(), fields), None);
    // Fields past KEPT_MAX are encoded each time, nothing kept.
    let long = vec![b'a'; KEPT_MAX];
    let big: &[(&[u8], &[u8])] = &[(b"x-long", &long)];
    let mut enc = Encoder::new(false);
    enc.encode(big.iter().copied(), &mut Vec::new());
    let before = enc.state();
    let mut block = Vec::new();
    enc.encode(big.iter().copied(), &mut block);
    last.keep(before, enc.state(), big, &block);
    assert_eq!(last.get(before, big), None);
}
