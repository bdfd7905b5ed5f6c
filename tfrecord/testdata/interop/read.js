// Reads a TFRecord file with @roboflow/tfrecords and prints, as JSON, the
// records it accepted (it stops at the first CRC mismatch) with their
// label, filename and a sha256 of image/encoded.
// Usage: node read.js IN
const fs = require("fs");
const crypto = require("crypto");
const { TFRecordsReader } = require("@roboflow/tfrecords/src/tensorFlowReader");
const buf = fs.readFileSync(process.argv[2]);
const origLog = console.log;
let complaints = [];
console.log = (...a) => complaints.push(a.join(" "));
const r = new TFRecordsReader(buf);
console.log = origLog;
const out = { count: r.length, complaints, records: [] };
// Read through the library's protobuf messages (its getFeature helper
// fails on empty bytes values).
for (const m of r.imageMessages) {
  const f = m.getContext().getFeatureMap();
  const bytes = (k) => f.get(k).getBytesList().getValueList_asU8();
  const enc = bytes("image/encoded")[0] || new Uint8Array(0);
  out.records.push({
    label: Number(f.get("image/class/label").getInt64List().getValueList()[0]),
    filename: Buffer.from(bytes("image/filename")[0]).toString(),
    sha256: crypto.createHash("sha256").update(enc).digest("hex"),
  });
}
process.stdout.write(JSON.stringify(out));
