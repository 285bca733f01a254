//! The TypeScript toolkit (`toolkits/typescript`, package `limen-toolkit`)
//! and its fixture Tool (`toolkits/typescript/test/fixture/echo-tool.ts`,
//! over the generated `echo-tools.ts`), compiled with tsc for the tests
//! that run them: the host's protocol tests, the generator's.
//!
//! Everything is compiled into a folder of `target/limen-ts/` named by a
//! hash of the sources, once: a folder already there is used as it is. It
//! is built under a name of its own and renamed into place, so tests
//! running at once never see half of one.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::{node, root, tsc};

/// The flags the fixture and generated modules are compiled under: `tsc
/// --strict` as the issue names, as Node runs ES modules.
pub const TS_FLAGS: &[&str] = &[
    "--strict", "--target", "es2022", "--module", "nodenext", "--types", "node",
];

/// The folder the toolkit and the fixture are compiled into, or `None`
/// (after [`absent`](crate::absent)'s message) when tsc or node is absent.
/// It holds `package.json` (ES modules), `node_modules/limen-toolkit/`
/// (the package as `npm install` would place it: `package.json` and
/// `dist/`) and `fixture/echo-tool.js`. A module compiled in a folder
/// under it imports `limen-toolkit` as an installed author's would.
pub fn ts_toolkit() -> Option<PathBuf> {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    tsc()?;
    node()?;
    if !root().join("toolkits/typescript/src/index.ts").is_file() {
        // Only while the package and its generator are merged apart.
        crate::absent("the TypeScript toolkit (toolkits/typescript/src) is not in this checkout");
        return None;
    }
    match BUILT.get_or_init(build) {
        Ok(dir) => Some(dir.clone()),
        Err(why) => panic!("the TypeScript toolkit does not build: {why}"),
    }
}

/// The command that runs the TypeScript fixture Tool (`node
/// .../fixture/echo-tool.js`), or `None` when tsc or node is absent.
pub fn ts_fixture_command() -> Option<Vec<String>> {
    let dir = ts_toolkit()?;
    let node = node()?;
    Some(vec![
        node.display().to_string(),
        dir.join("fixture/echo-tool.js").display().to_string(),
    ])
}

/// `tsc` with [`TS_FLAGS`] (types from the peers' `@types`) and `args`,
/// run in `dir`: `Err` with what it printed when it fails.
pub fn run_tsc(dir: &Path, args: &[&str]) -> Result<(), String> {
    let tsc = tsc().ok_or("tsc is absent")?;
    let types = root().join(".peers/node/node_modules/@types");
    let out = Command::new(tsc)
        .current_dir(dir)
        .args(TS_FLAGS)
        .arg("--typeRoots")
        .arg(&types)
        .args(args)
        .output()
        .map_err(|e| format!("tsc: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "tsc {}:\n{}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// The files whose contents name the build: the package's and the
/// fixture's sources.
fn sources() -> Result<Vec<PathBuf>, String> {
    let pkg = root().join("toolkits/typescript");
    let mut files = vec![pkg.join("package.json"), pkg.join("tsconfig.json")];
    let src = pkg.join("src");
    let mut ts: Vec<PathBuf> = std::fs::read_dir(&src)
        .map_err(|e| format!("{}: {e}", src.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "ts"))
        .collect();
    ts.sort();
    files.extend(ts);
    for f in ["echo-tool.ts", "echo-tools.ts"] {
        files.push(pkg.join("test/fixture").join(f));
    }
    Ok(files)
}

fn build() -> Result<PathBuf, String> {
    let files = sources()?;
    let mut hash = DefaultHasher::new();
    // The recipe below is part of what a build is.
    TS_FLAGS.hash(&mut hash);
    for f in &files {
        let text = std::fs::read(f).map_err(|e| format!("{}: {e}", f.display()))?;
        f.file_name().hash(&mut hash);
        text.hash(&mut hash);
    }
    let base = target().join("limen-ts");
    let done = base.join(format!("{:016x}", hash.finish()));
    if done.join("fixture/echo-tool.js").is_file() {
        return Ok(done);
    }
    let tmp = base.join(format!("build-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let pkg_out = tmp.join("node_modules/limen-toolkit");
    let fixture = tmp.join("fixture");
    for d in [&pkg_out, &fixture] {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    let pkg = root().join("toolkits/typescript");
    let copy = |from: &Path, to: &Path| {
        std::fs::copy(from, to)
            .map(|_| ())
            .map_err(|e| format!("{}: {e}", from.display()))
    };
    copy(&pkg.join("package.json"), &pkg_out.join("package.json"))?;
    // The package as its own build makes it (its tsconfig), into the copy.
    let tsc = tsc().ok_or("tsc is absent")?;
    let out = Command::new(tsc)
        .arg("-p")
        .arg(pkg.join("tsconfig.json"))
        .arg("--outDir")
        .arg(pkg_out.join("dist"))
        .output()
        .map_err(|e| format!("tsc: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "tsc -p toolkits/typescript:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    std::fs::write(
        tmp.join("package.json"),
        "{ \"private\": true, \"type\": \"module\" }\n",
    )
    .map_err(|e| e.to_string())?;
    for f in ["echo-tool.ts", "echo-tools.ts"] {
        copy(&pkg.join("test/fixture").join(f), &fixture.join(f))?;
    }
    run_tsc(&fixture, &["echo-tool.ts", "echo-tools.ts"])?;
    // Another test may have finished the same build first: theirs is as
    // good as this one.
    if std::fs::rename(&tmp, &done).is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    if done.join("fixture/echo-tool.js").is_file() {
        Ok(done)
    } else {
        Err(format!("{} was not built", done.display()))
    }
}

/// The cargo target folder the running test is in (`target/debug/deps/<test>`).
fn target() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's path");
    exe.ancestors()
        .nth(3)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| root().join("target"))
}
