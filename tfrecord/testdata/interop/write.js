// Writes a TFRecord file of tf.train.Example records with
// @roboflow/tfrecords, an implementation independent of ours.
// Usage: node write.js OUT N
const fs = require("fs");
const { TFRecordsBuilder, FeatureType } = require("@roboflow/tfrecords");
const [out, nStr] = process.argv.slice(2);
const n = parseInt(nStr, 10);
const records = [];
for (let i = 0; i < n; i++) {
  const b = new TFRecordsBuilder();
  // Deterministic payload of varying size (0 .. ~70 kB).
  const size = (i * 7919) % 70000;
  const payload = Buffer.alloc(size);
  for (let j = 0; j < size; j++) payload[j] = (i * 31 + j * 17) & 0xff;
  b.addFeature("image/encoded", FeatureType.Binary, payload);
  b.addFeature("image/class/label", FeatureType.Int64, i % 10);
  b.addFeature("image/filename", FeatureType.String, `img_${i}.jpg`);
  b.addArrayFeature("image/object/bbox/xmin", FeatureType.Float, [0.25, i / 4]);
  records.push(b.build());
}
fs.writeFileSync(out, TFRecordsBuilder.buildTFRecords(records));
