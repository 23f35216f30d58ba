use std::os::unix::fs::PermissionsExt;

use protocol::ChangeKind;

use super::*;

fn limits() -> CheckpointConfig {
    CheckpointConfig {
        enabled: true,
        max_file_bytes: 1000,
        max_files: 100,
    }
}

fn setup() -> (tempfile::TempDir, Checkpoints) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("work")).unwrap();
    let checkpoints = Checkpoints::new(&dir.path().join("stores"), "s1", dir.path().join("work"));
    (dir, checkpoints)
}

fn write(dir: &tempfile::TempDir, path: &str, text: &str) {
    let full = dir.path().join("work").join(path);
    std::fs::create_dir_all(full.parent().unwrap()).unwrap();
    std::fs::write(full, text).unwrap();
}

fn read(dir: &tempfile::TempDir, path: &str) -> Option<String> {
    std::fs::read_to_string(dir.path().join("work").join(path)).ok()
}

#[test]
fn a_run_is_diffed_and_rewound_with_ignored_files_left_alone() {
    let (dir, cp) = setup();
    write(&dir, ".gitignore", "target/\n");
    write(&dir, "keep.txt", "same\n");
    write(&dir, "edit.txt", "one\ntwo\n");
    write(&dir, "gone.txt", "bye\n");
    write(&dir, "secret.txt", "s\n");
    let secret = dir.path().join("work/secret.txt");
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    cp.record(RunId(1), Point::Start, &limits()).unwrap();
    write(&dir, "edit.txt", "one\nTWO\n");
    std::fs::remove_file(dir.path().join("work/gone.txt")).unwrap();
    std::fs::remove_file(&secret).unwrap();
    write(&dir, "a/b/new.txt", "new\n");
    write(&dir, "target/out", "built\n");
    cp.record(RunId(1), Point::End, &limits()).unwrap();

    let diff = cp.diff(None, &limits()).unwrap();
    let files: Vec<_> = diff
        .files
        .iter()
        .map(|f| (f.path.as_str(), f.kind))
        .collect();
    assert_eq!(
        files,
        [
            ("a/b/new.txt", ChangeKind::Added),
            ("edit.txt", ChangeKind::Modified),
            ("gone.txt", ChangeKind::Deleted),
            ("secret.txt", ChangeKind::Deleted),
        ]
    );
    assert!(diff.patch.contains("-two\n+TWO\n"), "{}", diff.patch);
    assert!(!diff.open);

    let report = cp.rewind(None, false, false, &limits()).unwrap();
    assert_eq!(report.removed, ["a/b/new.txt"]);
    assert_eq!(report.restored, ["edit.txt", "gone.txt", "secret.txt"]);
    assert_eq!(read(&dir, "edit.txt").unwrap(), "one\ntwo\n");
    assert_eq!(read(&dir, "gone.txt").unwrap(), "bye\n");
    let mode = std::fs::metadata(&secret).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert!(
        !dir.path().join("work/a").exists(),
        "created directories go too"
    );
    assert_eq!(read(&dir, "target/out").unwrap(), "built\n");
}

#[test]
fn a_file_changed_outside_since_the_run_is_kept_unless_forced() {
    let (dir, cp) = setup();
    write(&dir, "f.txt", "before\n");
    cp.record(RunId(1), Point::Start, &limits()).unwrap();
    write(&dir, "f.txt", "agent\n");
    cp.record(RunId(1), Point::End, &limits()).unwrap();
    write(&dir, "f.txt", "user\n");
    let report = cp.rewind(None, false, false, &limits()).unwrap();
    assert_eq!(report.kept, ["f.txt"]);
    assert_eq!(read(&dir, "f.txt").unwrap(), "user\n");
    let report = cp.rewind(None, true, false, &limits()).unwrap();
    assert_eq!(report.restored, ["f.txt"]);
    assert_eq!(read(&dir, "f.txt").unwrap(), "before\n");
}

#[test]
fn large_files_and_nested_repositories_are_listed_as_not_stored() {
    let (dir, cp) = setup();
    write(&dir, "big.bin", &"x".repeat(2000));
    write(&dir, "nested/n.txt", "n");
    git2::Repository::init(dir.path().join("work/nested")).unwrap();
    cp.record(RunId(1), Point::Start, &limits()).unwrap();
    // A file that grows over the limit loses its older content in the checkpoint.
    write(&dir, "grows.txt", "small");
    cp.record(RunId(1), Point::End, &limits()).unwrap();
    write(&dir, "grows.txt", &"y".repeat(2000));
    cp.record(RunId(2), Point::Start, &limits()).unwrap();
    let diff = cp.diff(Some(RunId(1)), &limits()).unwrap();
    assert_eq!(diff.not_stored, ["big.bin", "nested"]);
    let diff = cp.diff(Some(RunId(2)), &limits()).unwrap();
    assert!(
        diff.not_stored.contains(&"grows.txt".to_string()),
        "{diff:?}"
    );
}

#[test]
fn too_many_files_give_no_checkpoint_and_say_why() {
    let (dir, cp) = setup();
    for i in 0..101 {
        write(&dir, &format!("f{i}"), "x");
    }
    let err = cp.record(RunId(1), Point::Start, &limits()).unwrap_err();
    assert!(err.to_string().contains("more than 100 files"), "{err}");
    let err = cp.diff(None, &limits()).unwrap_err();
    assert!(err.to_string().contains("no run"), "{err}");
}

#[test]
fn a_symlink_in_the_way_is_not_followed() {
    let (dir, cp) = setup();
    let outside = tempfile::tempdir().unwrap();
    write(&dir, "d/f.txt", "inside\n");
    cp.record(RunId(1), Point::Start, &limits()).unwrap();
    std::fs::remove_dir_all(dir.path().join("work/d")).unwrap();
    cp.record(RunId(1), Point::End, &limits()).unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("work/d")).unwrap();
    let report = cp.rewind(None, true, false, &limits()).unwrap();
    assert_eq!(report.failed.len(), 1, "{report:?}");
    assert!(!outside.path().join("f.txt").exists());
}

#[test]
fn odd_file_kinds_and_names_do_not_break_a_checkpoint() {
    use std::os::unix::ffi::OsStrExt;
    let (dir, cp) = setup();
    let work = dir.path().join("work");
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("o.txt"), "outside").unwrap();
    let fifo = std::ffi::CString::new(work.join("pipe").as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid path, and mkfifo has no other preconditions.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    let _socket = std::os::unix::net::UnixListener::bind(work.join("sock")).unwrap();
    std::os::unix::fs::symlink("nowhere", work.join("dangling")).unwrap();
    std::os::unix::fs::symlink(outside.path(), work.join("out")).unwrap();
    std::fs::write(work.join("new\nline"), "n").unwrap();
    std::fs::write(work.join(std::ffi::OsStr::from_bytes(b"bad\xffname")), "b").unwrap();
    cp.record(RunId(1), Point::Start, &limits()).unwrap();
    std::fs::remove_file(work.join("dangling")).unwrap();
    std::fs::remove_file(work.join("new\nline")).unwrap();
    std::fs::remove_file(work.join(std::ffi::OsStr::from_bytes(b"bad\xffname"))).unwrap();
    std::fs::write(work.join("out/o.txt"), "changed through the link").unwrap();
    cp.record(RunId(1), Point::End, &limits()).unwrap();
    let diff = cp.diff(None, &limits()).unwrap();
    assert_eq!(diff.files.len(), 3, "{diff:?}");
    let report = cp.rewind(None, false, false, &limits()).unwrap();
    assert_eq!(report.restored.len(), 3, "{report:?}");
    assert_eq!(
        std::fs::read(work.join(std::ffi::OsStr::from_bytes(b"bad\xffname"))).unwrap(),
        b"b"
    );
    assert_eq!(
        std::fs::read_link(work.join("dangling")).unwrap(),
        Path::new("nowhere")
    );
    assert_eq!(
        std::fs::read_to_string(work.join("new\nline")).unwrap(),
        "n"
    );
    // What a symlink points to outside the directory is not the session's.
    assert_eq!(
        std::fs::read_to_string(outside.path().join("o.txt")).unwrap(),
        "changed through the link"
    );
}

#[test]
fn each_checkpoint_adds_one_pack_of_only_what_changed() {
    let (dir, cp) = setup();
    for i in 0..50 {
        write(&dir, &format!("d{}/f{i}", i % 5), &format!("file {i}\n"));
    }
    cp.record(RunId(1), Point::Start, &limits()).unwrap();
    let store = cp.store().to_path_buf();
    let packs = |_: &tempfile::TempDir| -> Vec<u64> {
        let mut sizes: Vec<u64> = std::fs::read_dir(store.join("objects/pack"))
            .unwrap()
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "pack"))
            .map(|e| e.metadata().unwrap().len())
            .collect();
        sizes.sort();
        sizes
    };
    assert_eq!(packs(&dir).len(), 1);
    let loose = std::fs::read_dir(cp.store().join("objects"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().len() == 2)
        .count();
    assert_eq!(loose, 0, "no loose objects");
    write(&dir, "d0/f0", "changed\n");
    cp.record(RunId(1), Point::End, &limits()).unwrap();
    let sizes = packs(&dir);
    assert_eq!(sizes.len(), 2);
    assert!(
        sizes[0] * 4 < sizes[1],
        "the second pack holds one file, not all: {sizes:?}"
    );
    let diff = cp.diff(None, &limits()).unwrap();
    assert_eq!(diff.files.len(), 1);
}

#[test]
fn the_users_own_repository_is_never_touched() {
    let (dir, cp) = setup();
    let work = dir.path().join("work");
    let repo = git2::Repository::init(&work).unwrap();
    write(&dir, "tracked.txt", "v1\n");
    let mut index = repo.index().unwrap();
    index.add_path(Path::new("tracked.txt")).unwrap();
    index.write().unwrap();
    let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
    let sig = git2::Signature::now("t", "t@example.com").unwrap();
    repo.commit(Some("HEAD"), &sig, &sig, "init", &tree, &[])
        .unwrap();
    let listing = |path: &Path| -> Vec<(std::path::PathBuf, Vec<u8>)> {
        let mut all = Vec::new();
        let mut stack = vec![path.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(dir).unwrap().flatten() {
                if entry.file_type().unwrap().is_dir() {
                    stack.push(entry.path());
                } else {
                    all.push((entry.path(), std::fs::read(entry.path()).unwrap()));
                }
            }
        }
        all.sort();
        all
    };
    let before = listing(&work.join(".git"));
    cp.record(RunId(1), Point::Start, &limits()).unwrap();
    write(&dir, "tracked.txt", "v2\n");
    cp.record(RunId(1), Point::End, &limits()).unwrap();
    let diff = cp.diff(None, &limits()).unwrap();
    assert_eq!(diff.files.len(), 1, "{diff:?}");
    cp.rewind(None, false, false, &limits()).unwrap();
    assert_eq!(read(&dir, "tracked.txt").unwrap(), "v1\n");
    assert!(
        listing(&work.join(".git")) == before,
        "the user's .git changed"
    );
}

#[test]
fn a_run_whose_end_was_not_recorded_is_undone_only_when_forced() {
    let (dir, cp) = setup();
    write(&dir, "f.txt", "before\n");
    cp.record(RunId(1), Point::Start, &limits()).unwrap();
    // The daemon stopped during the run: no end checkpoint. The change may be the user's.
    write(&dir, "f.txt", "after\n");
    let report = cp.rewind(None, false, false, &limits()).unwrap();
    assert_eq!(report.kept, ["f.txt"]);
    assert_eq!(read(&dir, "f.txt").unwrap(), "after\n");
    let report = cp.rewind(None, true, false, &limits()).unwrap();
    assert_eq!(report.restored, ["f.txt"]);
    assert_eq!(read(&dir, "f.txt").unwrap(), "before\n");
}
